// mql_compat.h: the MQL runtime functions the tradeterm agents call, mapped
// onto C++17 and POSIX so that the same .mqh/.mq5/.mq4 sources compile with
// g++ (see agents/mql/README.md, "The harness"). It models MetaTrader's
// documented behaviour, not the friendliest one; each modelled behaviour has
// a check in selftest.cpp ("compat_*") that fails on a friendlier model.
//
// What is mapped here:
//   - MQL types (uchar, ushort, uint, ulong, datetime, string) and the dynamic
//     array wrappers TtInts/TtLongs/TtDoubles/TtStrings/TtBytes/TtChars (in MQL
//     they are declared in Tradeterm/Platform.mqh with native `T v[]` arrays);
//   - `string` holds UTF-16 code units as in MQL: StringLen, StringGetCharacter,
//     StringSubstr and StringFind count units; StringToCharArray and
//     CharArrayToString convert with the code page (CP_UTF8, CP_ACP modelled
//     as Latin-1) and StringToCharArray copies the terminating zero when
//     count is -1, never shrinking the array;
//   - string functions, ArrayResize/ArraySize/ArrayCopy, math, time;
//   - MQL5 builds only (not with -DTT_HARNESS_MT4: MQL4 has no sockets):
//     Socket* -> POSIX sockets, TLS through OpenSSL with -DTT_HARNESS_TLS.
//     SocketRead returns -1 when nothing arrives within its timeout (and a
//     timeout of 0 means the default 120 s); SocketIsReadable speculatively
//     answers 1 on an empty buffer until a read function has looked; a
//     socket connected to port 443 is secured by SocketConnect itself and
//     SocketTlsHandshake on it fails;
//   - WebRequest -> a small HTTP/1.1 client (https:// with -DTT_HARNESS_TLS)
//     that first applies the terminal's allow-list ($MQL_ALLOWED_URLS):
//     -1 with 4014 (MQL5) / 4060 (MQL4) for a URL not in it; the allow-list
//     applies to SocketConnect too;
//   - FileOpen & co. -> stdio in $MQL_FILES_DIR (default ./files) or, with
//     FILE_COMMON, $MQL_COMMON_DIR; FILE_TXT|FILE_ANSI text in the code page
//     given, FILE_TXT alone UTF-16LE with a byte order mark;
//   - CryptEncode (BASE64, SHA1, SHA256);
//   - Print/Comment -> stderr.
// Harness-only knobs (no MetaTrader equivalent): $MQL_PORT_MAP ("443=8443,80=8080")
// connects a requested port to another local port, so that the port-443
// rules are exercised against a gateway on a free port.
// The trade and market-data API is in fake_market.h, fake_terminal.h (MQL5)
// and fake_terminal4.h (MQL4).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef long datetime;
typedef unsigned int color;

#define input
#define sinput
#define clrNONE 0xFFFFFFFFu
#define INVALID_HANDLE (-1)
#define WHOLE_ARRAY (-1)
#define EMPTY_VALUE DBL_MAX
#define CP_ACP 0
#define CP_UTF8 65001
#define INIT_SUCCEEDED 0
#define INIT_FAILED 1
#define INIT_PARAMETERS_INCORRECT 2

// ---------------------------------------------------------------- UTF-16
namespace compat_utf {
// UTF-8 bytes to UTF-16 code units (malformed bytes become U+FFFD).
inline std::u16string from_utf8(const std::string &b) {
    std::u16string out;
    out.reserve(b.size());
    size_t i = 0, n = b.size();
    while (i < n) {
        uint c = (uchar)b[i];
        uint cp = 0xFFFD;
        size_t len = 1;
        if (c < 0x80) cp = c;
        else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else { out.push_back((char16_t)0xFFFD); i++; continue; }
        bool ok = i + len <= n;
        for (size_t k = 1; ok && k < len; k++) {
            uint d = (uchar)b[i + k];
            if ((d & 0xC0) != 0x80) ok = false;
            else cp = (cp << 6) | (d & 0x3F);
        }
        if (!ok) { out.push_back((char16_t)0xFFFD); i++; continue; }
        i += len;
        if (cp >= 0x10000 && cp <= 0x10FFFF) {
            cp -= 0x10000;
            out.push_back((char16_t)(0xD800 + (cp >> 10)));
            out.push_back((char16_t)(0xDC00 + (cp & 0x3FF)));
        } else {
            out.push_back((char16_t)cp);
        }
    }
    return out;
}
// UTF-16 code units to UTF-8 bytes (a lone surrogate becomes U+FFFD).
inline std::string to_utf8(const std::u16string &u) {
    std::string out;
    out.reserve(u.size());
    for (size_t i = 0; i < u.size(); i++) {
        uint cp = u[i];
        if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < u.size() && u[i + 1] >= 0xDC00 && u[i + 1] < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (u[i + 1] - 0xDC00);
            i++;
        } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;
        }
        if (cp < 0x80) out += (char)cp;
        else if (cp < 0x800) { out += (char)(0xC0 | (cp >> 6)); out += (char)(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) { out += (char)(0xE0 | (cp >> 12)); out += (char)(0x80 | ((cp >> 6) & 0x3F)); out += (char)(0x80 | (cp & 0x3F)); }
        else { out += (char)(0xF0 | (cp >> 18)); out += (char)(0x80 | ((cp >> 12) & 0x3F)); out += (char)(0x80 | ((cp >> 6) & 0x3F)); out += (char)(0x80 | (cp & 0x3F)); }
    }
    return out;
}
// Code units to bytes in a code page: CP_UTF8, anything else is the ANSI
// page, modelled as Latin-1 (Windows-1252 differs at 0x80-0x9F): units
// above 0xFF become '?'.
inline std::string encode(const std::u16string &u, uint codepage) {
    if (codepage == CP_UTF8) return to_utf8(u);
    std::string out;
    for (size_t i = 0; i < u.size(); i++) {
        uint c = u[i];
        if (c >= 0xD800 && c < 0xDC00 && i + 1 < u.size() && u[i + 1] >= 0xDC00 && u[i + 1] < 0xE000) i++;
        out += c <= 0xFF ? (char)c : '?';
    }
    return out;
}
inline std::u16string decode(const std::string &b, uint codepage) {
    if (codepage == CP_UTF8) return from_utf8(b);
    std::u16string out;
    for (char c : b) out.push_back((char16_t)(uchar)c);
    return out;
}
} // namespace compat_utf

// ---------------------------------------------------------------- string
// MQL's string: UTF-16 code units with value semantics. Adding a number to a
// string is an error here (MQL converts implicitly, std::string would append
// a char): the shared code always converts with IntegerToString or
// DoubleToString, and this catches any place that forgets. C++ literals are
// UTF-8 and decoded; utf8() gives the harness the text back as UTF-8.
class string {
public:
    std::u16string u;
    string() {}
    string(const char *c) : u(compat_utf::from_utf8(c ? c : "")) {}
    string(const std::string &x) : u(compat_utf::from_utf8(x)) {}
    static string units(const std::u16string &x) { string r; r.u = x; return r; }
    std::string utf8() const { return compat_utf::to_utf8(u); }
    string &operator+=(const string &o) { u += o.u; return *this; }
    string &operator+=(const char *o) { u += compat_utf::from_utf8(o); return *this; }
    template <class T> string &operator+=(T) = delete;
};
inline string operator+(const string &a, const string &b) { return string::units(a.u + b.u); }
inline string operator+(const string &a, const char *b) { return string::units(a.u + compat_utf::from_utf8(b)); }
inline string operator+(const char *a, const string &b) { return string::units(compat_utf::from_utf8(a) + b.u); }
template <class T> string operator+(const string &, T) = delete;
template <class T> string operator+(T, const string &) = delete;
inline bool operator==(const string &a, const string &b) { return a.u == b.u; }
inline bool operator==(const string &a, const char *b) { return a.u == compat_utf::from_utf8(b); }
inline bool operator!=(const string &a, const string &b) { return a.u != b.u; }
inline bool operator!=(const string &a, const char *b) { return a.u != compat_utf::from_utf8(b); }
inline bool operator<(const string &a, const string &b) { return a.u < b.u; }
inline bool operator>(const string &a, const string &b) { return a.u > b.u; }

// ---------------------------------------------------------------- errors
static int _LastError = 0;
inline int GetLastError() { return _LastError; }
inline void ResetLastError() { _LastError = 0; }
inline void SetUserError(ushort e) { _LastError = 65536 + e; }

// ---------------------------------------------------------------- arrays
// The wrappers TtInts & co. (Tradeterm/Platform.mqh) hold `TT_ARRAY(T)`: a
// native dynamic array `T v[]` in MQL, a std::vector here.
#define TT_ARRAY(T) std::vector<T> v

template <class T> int ArraySize(const std::vector<T> &a) { return (int)a.size(); }
template <class T> int ArrayResize(std::vector<T> &a, int n, int reserve = 0) {
    if (n < 0) return -1;
    if (reserve > 0 && a.capacity() < (size_t)(n + reserve)) a.reserve((size_t)(n + reserve));
    a.resize((size_t)n);
    return n;
}
template <class T> void ArrayFree(std::vector<T> &a) { std::vector<T>().swap(a); }
template <class T>
int ArrayCopy(std::vector<T> &dst, const std::vector<T> &src, int dst_start = 0, int src_start = 0,
              int count = WHOLE_ARRAY) {
    if (src_start < 0 || src_start > (int)src.size()) return 0;
    int n = (int)src.size() - src_start;
    if (count >= 0 && count < n) n = count;
    if (n <= 0) return 0;
    if ((int)dst.size() < dst_start + n) dst.resize((size_t)(dst_start + n));
    std::copy(src.begin() + src_start, src.begin() + src_start + n, dst.begin() + dst_start);
    return n;
}

// ---------------------------------------------------------------- strings
// Positions and lengths are in UTF-16 code units, as in MQL.
inline int StringLen(const string &s) { return (int)s.u.size(); }
inline string StringSubstr(const string &s, int start, int length = -1) {
    if (start < 0) start = 0;
    if (start >= (int)s.u.size()) return string();
    if (length < 0) return string::units(s.u.substr((size_t)start));
    return string::units(s.u.substr((size_t)start, (size_t)length));
}
inline int StringFind(const string &s, const string &match, int start = 0) {
    if (start < 0) start = 0;
    size_t p = s.u.find(match.u, (size_t)start);
    return p == std::u16string::npos ? -1 : (int)p;
}
inline ushort StringGetCharacter(const string &s, int pos) {
    if (pos < 0 || pos >= (int)s.u.size()) return 0;
    return (ushort)s.u[(size_t)pos];
}
inline long StringToInteger(const string &s) { return strtol(s.utf8().c_str(), nullptr, 10); }
inline double StringToDouble(const string &s) { return strtod(s.utf8().c_str(), nullptr); }
inline string IntegerToString(long v, int str_len = 0, ushort fill = ' ') {
    std::u16string r = compat_utf::from_utf8(std::to_string(v));
    while ((int)r.size() < str_len) r.insert(r.begin(), (char16_t)fill);
    return string::units(r);
}
inline string DoubleToString(double v, int digits = 8) {
    if (digits < 0) digits = 0;
    if (digits > 16) digits = 16;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", digits, v);
    return string(buf);
}
inline string ShortToString(ushort c) { return string::units(std::u16string(1, (char16_t)c)); }
inline string CharToString(uchar c) { return string::units(std::u16string(1, (char16_t)c)); }
inline bool StringAdd(string &s, const string &add) { s.u += add.u; return true; }
inline int StringReplace(string &s, const string &find, const string &repl) {
    if (find.u.empty()) return 0;
    int n = 0;
    size_t p = 0;
    while ((p = s.u.find(find.u, p)) != std::u16string::npos) {
        s.u.replace(p, find.u.size(), repl.u);
        p += repl.u.size();
        n++;
    }
    return n;
}
inline int StringSplit(const string &s, ushort sep, std::vector<string> &out) {
    out.clear();
    std::u16string cur;
    for (char16_t c : s.u) {
        if ((ushort)c == sep) { out.push_back(string::units(cur)); cur.clear(); }
        else cur += c;
    }
    out.push_back(string::units(cur));
    return (int)out.size();
}
// ASCII letters only (the shared code lower-cases schemes and header names).
inline bool StringToUpper(string &s) { for (auto &c : s.u) if (c >= 'a' && c <= 'z') c = (char16_t)(c - 32); return true; }
inline bool StringToLower(string &s) { for (auto &c : s.u) if (c >= 'A' && c <= 'Z') c = (char16_t)(c + 32); return true; }
// The text converted to the code page, copied to array[start..]; with
// count -1 (WHOLE_ARRAY) the terminating zero is copied too. A dynamic
// array grows when needed and is never shrunk. Returns the number of
// elements copied (terminating zero included).
template <class B>
int StringToCharArray(const string &text, std::vector<B> &array, int start = 0, int count = -1,
                      uint codepage = CP_ACP) {
    if (start < 0) start = 0;
    std::string bytes = compat_utf::encode(text.u, codepage);
    bytes.push_back('\0');
    size_t n = bytes.size();
    if (count >= 0 && (size_t)count < n) n = (size_t)count;
    if (array.size() < (size_t)start + n) array.resize((size_t)start + n);
    for (size_t i = 0; i < n; i++) array[(size_t)start + i] = (B)bytes[i];
    return (int)n;
}
// array[start..start+count) (up to a zero) decoded from the code page.
template <class B>
string CharArrayToString(const std::vector<B> &array, int start = 0, int count = -1, uint codepage = CP_ACP) {
    std::string r;
    int end = (int)array.size();
    if (start < 0) start = 0;
    if (count >= 0 && start + count < end) end = start + count;
    for (int i = start; i < end; i++) {
        if (array[(size_t)i] == 0) break;
        r += (char)array[(size_t)i];
    }
    return string::units(compat_utf::decode(r, codepage));
}

// ---------------------------------------------------------------- math
#define DBL_MAX_ 1.7976931348623158e308
inline double MathAbs(double x) { return fabs(x); }
inline double MathMin(double a, double b) { return a < b ? a : b; }
inline double MathMax(double a, double b) { return a > b ? a : b; }
inline double MathRound(double x) { return round(x); }
inline double MathFloor(double x) { return floor(x); }
inline double MathCeil(double x) { return ceil(x); }
inline double MathPow(double a, double b) { return pow(a, b); }
inline double MathSqrt(double a) { return sqrt(a); }
inline double MathMod(double a, double b) { return fmod(a, b); }
inline bool MathIsValidNumber(double x) { return std::isfinite(x); }
inline int MathRand() { return rand() & 0x7FFF; }
inline void MathSrand(uint seed) { srand(seed); }
inline double NormalizeDouble(double v, int digits) {
    double f = pow(10.0, digits);
    return round(v * f) / f;
}

// ---------------------------------------------------------------- time
inline uint GetTickCount() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint)((ulong)ts.tv_sec * 1000u + (ulong)ts.tv_nsec / 1000000u);
}
inline ulong GetMicrosecondCount() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ulong)ts.tv_sec * 1000000u + (ulong)ts.tv_nsec / 1000u;
}
inline datetime TimeGMT() { return (datetime)time(nullptr); }
inline datetime TimeLocal() { return (datetime)time(nullptr); }
inline void Sleep(int ms) { if (ms > 0) usleep((useconds_t)ms * 1000); }
inline string TimeToString(datetime t) {
    time_t tt = (time_t)t;
    struct tm g;
    gmtime_r(&tt, &g);
    char buf[32];
    strftime(buf, sizeof buf, "%Y.%m.%d %H:%M:%S", &g);
    return string(buf);
}

// ---------------------------------------------------------------- output
static std::string g_compat_comment;
inline void Print(const string &s) { fprintf(stderr, "[agent] %s\n", s.utf8().c_str()); }
inline void Comment(const string &s) {
    if (s.utf8() != g_compat_comment) {
        g_compat_comment = s.utf8();
        fprintf(stderr, "[chart] %s\n", s.utf8().c_str());
    }
}

// ---------------------------------------------------------------- files
// The sandbox: $MQL_FILES_DIR (MQL5/Files or MQL4/Files of the terminal)
// and, with FILE_COMMON, $MQL_COMMON_DIR (Terminal/Common/Files). Text files
// (FILE_TXT, FILE_CSV) are read a line at a time; FILE_ANSI ones hold the
// text in the code page given to FileOpen (CP_UTF8, or the ANSI page), the
// others UTF-16LE after a byte order mark.
#define FILE_READ 1
#define FILE_WRITE 2
#define FILE_BIN 4
#define FILE_CSV 8
#define FILE_TXT 16
#define FILE_ANSI 32
#define FILE_UNICODE 64
#define FILE_SHARE_READ 128
#define FILE_SHARE_WRITE 256
#define FILE_REWRITE 512
#define FILE_COMMON 4096
#define SEEK_SET_ 0
struct CompatFile { FILE *f; int flags; uint codepage; };
static std::vector<CompatFile> g_compat_files;
inline std::string compat_dir(const char *env, const char *def) {
    const char *d = getenv(env);
    std::string dir = d && *d ? d : def;
    mkdir(dir.c_str(), 0700);
    return dir;
}
inline std::string compat_files_dir() { return compat_dir("MQL_FILES_DIR", "files"); }
inline std::string compat_common_dir() { return compat_dir("MQL_COMMON_DIR", "common-files"); }
inline std::string compat_path(const string &name, int flags) {
    return ((flags & FILE_COMMON) ? compat_common_dir() : compat_files_dir()) + "/" + name.utf8();
}
inline bool compat_unicode(int flags) { return (flags & (FILE_TXT | FILE_CSV)) && !(flags & FILE_ANSI); }
inline int FileOpen(const string &name, int flags, short delimiter = '\t', uint codepage = CP_ACP) {
    (void)delimiter;
    std::string path = compat_path(name, flags);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) { _LastError = 5004; return INVALID_HANDLE; }  // ERR_CANNOT_OPEN_FILE
    const char *mode = "rb";
    if ((flags & FILE_READ) && (flags & FILE_WRITE)) {
        FILE *probe = fopen(path.c_str(), "ab");
        if (probe) fclose(probe);
        mode = "r+b";
    } else if (flags & FILE_WRITE) {
        mode = "wb";
    }
    FILE *f = fopen(path.c_str(), mode);
    if (!f) { _LastError = 5004; return INVALID_HANDLE; }
    if (compat_unicode(flags) && (flags & FILE_READ)) {
        // Skip the byte order mark.
        int a = fgetc(f), b = fgetc(f);
        if (!(a == 0xFF && b == 0xFE)) fseek(f, 0, SEEK_SET);
    }
    g_compat_files.push_back({f, flags, codepage});
    return (int)g_compat_files.size() - 1;
}
inline CompatFile *compat_file(int h) {
    if (h < 0 || h >= (int)g_compat_files.size() || !g_compat_files[(size_t)h].f) return nullptr;
    return &g_compat_files[(size_t)h];
}
inline void FileClose(int h) {
    CompatFile *f = compat_file(h);
    if (f) { fclose(f->f); f->f = nullptr; }
}
inline void FileFlush(int h) { CompatFile *f = compat_file(h); if (f) fflush(f->f); }
inline bool FileIsEnding(int h) {
    CompatFile *f = compat_file(h);
    if (!f) return true;
    int c = fgetc(f->f);
    if (c == EOF) return true;
    ungetc(c, f->f);
    return false;
}
// Text files: the next line without its "\r\n".
inline string FileReadString(int h, int length = -1) {
    (void)length;
    CompatFile *f = compat_file(h);
    if (!f) return string();
    if (compat_unicode(f->flags)) {
        std::u16string r;
        int a, b;
        while ((a = fgetc(f->f)) != EOF && (b = fgetc(f->f)) != EOF) {
            char16_t c = (char16_t)(a | (b << 8));
            if (c == '\n') break;
            if (c != '\r') r += c;
        }
        return string::units(r);
    }
    std::string r;
    int c;
    while ((c = fgetc(f->f)) != EOF) {
        if (c == '\n') break;
        if (c != '\r') r += (char)c;
    }
    return string::units(compat_utf::decode(r, f->codepage));
}
// Returns the number of bytes written.
inline uint FileWriteString(int h, const string &s, int length = -1) {
    (void)length;
    CompatFile *f = compat_file(h);
    if (!f) return 0;
    if (compat_unicode(f->flags)) {
        std::string bytes;
        if (ftell(f->f) == 0) bytes = "\xFF\xFE";
        for (char16_t c : s.u) { bytes += (char)(c & 0xFF); bytes += (char)(c >> 8); }
        return (uint)fwrite(bytes.data(), 1, bytes.size(), f->f);
    }
    std::string bytes = compat_utf::encode(s.u, f->codepage);
    return (uint)fwrite(bytes.data(), 1, bytes.size(), f->f);
}
inline bool FileSeek(int h, long offset, int origin) {
    CompatFile *f = compat_file(h);
    return f && fseek(f->f, offset, origin) == 0;
}
inline bool FileIsExist(const string &name, int flags = 0) {
    struct stat st;
    return stat(compat_path(name, flags).c_str(), &st) == 0;
}
inline bool FileDelete(const string &name, int flags = 0) {
    return unlink(compat_path(name, flags).c_str()) == 0;
}

// ---------------------------------------------------------------- crypt
enum ENUM_CRYPT_METHOD { CRYPT_BASE64, CRYPT_AES128, CRYPT_AES256, CRYPT_DES, CRYPT_HASH_SHA1, CRYPT_HASH_SHA256, CRYPT_HASH_MD5, CRYPT_ARCH_ZIP };

namespace compat_crypto {
inline uint rol(uint x, int n) { return (x << n) | (x >> (32 - n)); }
inline uint ror(uint x, int n) { return (x >> n) | (x << (32 - n)); }
inline std::vector<uchar> pad(const std::vector<uchar> &m) {
    std::vector<uchar> p(m);
    ulong bits = (ulong)m.size() * 8u;
    p.push_back(0x80);
    while (p.size() % 64 != 56) p.push_back(0);
    for (int i = 7; i >= 0; i--) p.push_back((uchar)(bits >> (i * 8)));
    return p;
}
inline std::vector<uchar> sha1(const std::vector<uchar> &m) {
    uint h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::vector<uchar> p = pad(m);
    for (size_t off = 0; off < p.size(); off += 64) {
        uint w[80];
        for (int i = 0; i < 16; i++)
            w[i] = (uint)p[off + i * 4] << 24 | (uint)p[off + i * 4 + 1] << 16 | (uint)p[off + i * 4 + 2] << 8 | p[off + i * 4 + 3];
        for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        uint a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
            uint f, k;
            if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999; }
            else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1; }
            else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
            else { f = b ^ c ^ d; k = 0xCA62C1D6; }
            uint t = rol(a, 5) + f + e + k + w[i];
            e = d; d = c; c = rol(b, 30); b = a; a = t;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
    }
    std::vector<uchar> out;
    for (uint x : h) for (int i = 3; i >= 0; i--) out.push_back((uchar)(x >> (i * 8)));
    return out;
}
inline std::vector<uchar> sha256(const std::vector<uchar> &m) {
    static const uint k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::vector<uchar> p = pad(m);
    for (size_t off = 0; off < p.size(); off += 64) {
        uint w[64];
        for (int i = 0; i < 16; i++)
            w[i] = (uint)p[off + i * 4] << 24 | (uint)p[off + i * 4 + 1] << 16 | (uint)p[off + i * 4 + 2] << 8 | p[off + i * 4 + 3];
        for (int i = 16; i < 64; i++) {
            uint s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; i++) {
            uint S1 = ror(e, 6) ^ ror(e, 11) ^ ror(e, 25);
            uint ch = (e & f) ^ (~e & g);
            uint t1 = hh + S1 + ch + k[i] + w[i];
            uint S0 = ror(a, 2) ^ ror(a, 13) ^ ror(a, 22);
            uint mj = (a & b) ^ (a & c) ^ (b & c);
            uint t2 = S0 + mj;
            hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }
    std::vector<uchar> out;
    for (uint x : h) for (int i = 3; i >= 0; i--) out.push_back((uchar)(x >> (i * 8)));
    return out;
}
inline std::vector<uchar> base64(const std::vector<uchar> &m) {
    static const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uchar> out;
    size_t i = 0;
    for (; i + 2 < m.size(); i += 3) {
        uint v = (uint)m[i] << 16 | (uint)m[i + 1] << 8 | m[i + 2];
        out.push_back((uchar)t[v >> 18]); out.push_back((uchar)t[(v >> 12) & 63]);
        out.push_back((uchar)t[(v >> 6) & 63]); out.push_back((uchar)t[v & 63]);
    }
    if (i + 1 == m.size()) {
        uint v = (uint)m[i] << 16;
        out.push_back((uchar)t[v >> 18]); out.push_back((uchar)t[(v >> 12) & 63]);
        out.push_back('='); out.push_back('=');
    } else if (i + 2 == m.size()) {
        uint v = (uint)m[i] << 16 | (uint)m[i + 1] << 8;
        out.push_back((uchar)t[v >> 18]); out.push_back((uchar)t[(v >> 12) & 63]);
        out.push_back((uchar)t[(v >> 6) & 63]); out.push_back('=');
    }
    return out;
}
} // namespace compat_crypto

inline int CryptEncode(ENUM_CRYPT_METHOD method, const std::vector<uchar> &data, const std::vector<uchar> &key,
                       std::vector<uchar> &result) {
    (void)key;
    switch (method) {
    case CRYPT_BASE64: result = compat_crypto::base64(data); break;
    case CRYPT_HASH_SHA1: result = compat_crypto::sha1(data); break;
    case CRYPT_HASH_SHA256: result = compat_crypto::sha256(data); break;
    default: _LastError = 4029; return 0;
    }
    return (int)result.size();
}

// ---------------------------------------------------------------- allow-list
// Tools > Options > Expert Advisors > "Allow WebRequest for listed URL": the
// harness reads the list from $MQL_ALLOWED_URLS (comma-separated, e.g.
// "https://gateway.example.com,http://127.0.0.1:8081"). An empty or unset
// list allows nothing, as in a fresh terminal. WebRequest needs an entry
// with the URL's scheme, host and port (the scheme's default when none is
// written) whose path is a prefix of the URL's; SocketConnect an entry with
// the host and port.
struct CompatUrl { std::string scheme, host, path; uint port = 0; bool ok = false; };
inline CompatUrl compat_parse_url(const std::string &url) {
    CompatUrl r;
    size_t sep = url.find("://");
    if (sep == std::string::npos) return r;
    r.scheme = url.substr(0, sep);
    for (auto &c : r.scheme) c = (char)tolower((uchar)c);
    std::string rest = url.substr(sep + 3);
    size_t slash = rest.find('/');
    std::string hostport = slash == std::string::npos ? rest : rest.substr(0, slash);
    r.path = slash == std::string::npos ? "/" : rest.substr(slash);
    r.port = r.scheme == "https" ? 443 : 80;
    size_t colon = hostport.rfind(':');
    r.host = hostport;
    if (colon != std::string::npos) {
        r.host = hostport.substr(0, colon);
        long p = atol(hostport.c_str() + colon + 1);
        if (p <= 0 || p > 65535) return r;
        r.port = (uint)p;
    }
    for (auto &c : r.host) c = (char)tolower((uchar)c);
    r.ok = !r.host.empty();
    return r;
}
inline std::vector<CompatUrl> compat_allow_list() {
    std::vector<CompatUrl> out;
    const char *env = getenv("MQL_ALLOWED_URLS");
    std::string all = env ? env : "";
    size_t p = 0;
    while (p <= all.size()) {
        size_t e = all.find(',', p);
        if (e == std::string::npos) e = all.size();
        std::string item = all.substr(p, e - p);
        while (!item.empty() && item.back() == ' ') item.pop_back();
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        CompatUrl u = compat_parse_url(item);
        if (u.ok) out.push_back(u);
        p = e + 1;
    }
    return out;
}
inline bool compat_url_allowed(const CompatUrl &u) {
    for (auto &a : compat_allow_list()) {
        if (a.scheme != u.scheme || a.host != u.host || a.port != u.port) continue;
        std::string prefix = a.path == "/" ? "" : a.path;
        if (u.path.compare(0, prefix.size(), prefix) == 0) return true;
    }
    return false;
}
inline bool compat_host_allowed(const std::string &host, uint port) {
    std::string h = host;
    for (auto &c : h) c = (char)tolower((uchar)c);
    for (auto &a : compat_allow_list())
        if (a.host == h && a.port == port) return true;
    return false;
}
// $MQL_PORT_MAP ("443=8443"): the local port a requested port really goes to.
inline uint compat_mapped_port(uint port) {
    const char *env = getenv("MQL_PORT_MAP");
    std::string all = env ? env : "";
    size_t p = 0;
    while (p < all.size()) {
        size_t e = all.find(',', p);
        if (e == std::string::npos) e = all.size();
        std::string item = all.substr(p, e - p);
        size_t eq = item.find('=');
        if (eq != std::string::npos && (uint)atol(item.c_str()) == port) return (uint)atol(item.c_str() + eq + 1);
        p = e + 1;
    }
    return port;
}

inline int compat_connect(const std::string &host, uint port, uint timeout_ms) {
    struct addrinfo hints, *res = nullptr;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string p = std::to_string(port);
    if (getaddrinfo(host.c_str(), p.c_str(), &hints, &res) != 0 || !res) return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) continue;
        int fl = fcntl(fd, F_GETFL, 0);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r != 0 && errno == EINPROGRESS) {
            struct pollfd pf = {fd, POLLOUT, 0};
            if (poll(&pf, 1, (int)timeout_ms) == 1) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                r = err == 0 ? 0 : -1;
            }
        }
        fcntl(fd, F_SETFL, fl);
        if (r == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

#ifdef TT_HARNESS_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
// Client TLS over a connected blocking fd; the fd is non-blocking afterwards.
inline SSL *compat_tls_connect(int fd, const std::string &host) {
    static SSL_CTX *ctx = nullptr;
    if (!ctx) {
        ctx = SSL_CTX_new(TLS_client_method());
        const char *ca = getenv("MQL_CA_FILE");
        if (ca && *ca) SSL_CTX_load_verify_locations(ctx, ca, nullptr);
        else SSL_CTX_set_default_verify_paths(ctx);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    }
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, host.c_str());
    SSL_set1_host(ssl, host.c_str());
    if (SSL_connect(ssl) != 1) { SSL_free(ssl); return nullptr; }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
    return ssl;
}
inline bool compat_tls_write(SSL *ssl, int fd, const uchar *data, size_t len) {
    size_t sent = 0;
    while (sent < len) {
        int n = SSL_write(ssl, data + sent, (int)(len - sent));
        if (n > 0) { sent += (size_t)n; continue; }
        int e = SSL_get_error(ssl, n);
        if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ) return false;
        struct pollfd pf = {fd, (short)(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN), 0};
        poll(&pf, 1, 1000);
    }
    return true;
}
// Reads what is available now; -1 when the connection is closed and nothing came.
inline int compat_tls_read(SSL *ssl, std::vector<uchar> &out, size_t maxlen) {
    out.resize(maxlen);
    size_t got = 0;
    bool closed = false;
    while (got < maxlen) {
        int n = SSL_read(ssl, out.data() + got, (int)(maxlen - got));
        if (n > 0) { got += (size_t)n; continue; }
        int e = SSL_get_error(ssl, n);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) closed = true;
        break;
    }
    out.resize(got);
    return got == 0 && closed ? -1 : (int)got;
}
#endif

// ---------------------------------------------------------------- sockets
// MQL5 only: MQL4 has no Socket* functions (the MT4 build does not see them).
// Error codes: 5270 ERR_NETSOCKET_INVALIDHANDLE, 5272
// ERR_NETSOCKET_CANNOT_CONNECT, 5273 ERR_NETSOCKET_IO_ERROR, 5274
// ERR_NETSOCKET_HANDSHAKE_FAILED, 4014 ERR_FUNCTION_NOT_ALLOWED (the host
// is not in the allow-list).
#ifndef TT_HARNESS_MT4
#define TT_COMPAT_DEFAULT_READ_MS 120000
struct CompatSock {
    int fd = -1;
    uint port = 0;          // the port asked for (443: secured by SocketConnect)
    bool secured = false;   // TLS established
    bool peer_closed = false;
    bool speculative = true;  // SocketIsReadable may still answer 1 on an empty buffer
    uint send_ms = 0, recv_ms = 0;
#ifdef TT_HARNESS_TLS
    SSL *ssl = nullptr;
#endif
};
static std::vector<CompatSock> g_compat_socks;
inline CompatSock *compat_sock(int h) { return h >= 0 && h < (int)g_compat_socks.size() ? &g_compat_socks[(size_t)h] : nullptr; }
inline int compat_fd(int h) { CompatSock *s = compat_sock(h); return s ? s->fd : -1; }
inline int SocketCreate(uint flags = 0) {
    (void)flags;
    g_compat_socks.push_back(CompatSock());
    return (int)g_compat_socks.size() - 1;
}
// The TCP connection; to port 443 also the TLS handshake (the terminal
// secures connections to 443 itself: MQL5 reference, SocketTlsHandshake).
inline bool SocketConnect(int h, const string &host, uint port, uint timeout) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return false; }
    if (!compat_host_allowed(host.utf8(), port)) { _LastError = 4014; return false; }
    int fd = compat_connect(host.utf8(), compat_mapped_port(port), timeout);
    if (fd < 0) { _LastError = 5272; return false; }
    *s = CompatSock();
    s->fd = fd;
    s->port = port;
    if (port == 443) {
#ifdef TT_HARNESS_TLS
        s->ssl = compat_tls_connect(fd, host.utf8());
        s->secured = s->ssl != nullptr;
#endif
        if (!s->secured) { close(fd); s->fd = -1; _LastError = 5274; return false; }
    }
    return true;
}
inline bool SocketTimeouts(int h, uint send_ms, uint recv_ms) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return false; }
    s->send_ms = send_ms;
    s->recv_ms = recv_ms;
    return true;
}
// Fails on a socket that is already secure (a connection to port 443): the
// reference says not to call it there; the harness makes a second handshake
// an error so that an advisor calling it is caught.
inline bool SocketTlsHandshake(int h, const string &host) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return false; }
    if (s->fd < 0 || s->secured) { _LastError = 5274; return false; }
#ifdef TT_HARNESS_TLS
    s->ssl = compat_tls_connect(s->fd, host.utf8());
    s->secured = s->ssl != nullptr;
#else
    (void)host;
#endif
    if (!s->secured) { _LastError = 5274; return false; }
    return true;
}
inline int SocketTlsSend(int h, const std::vector<uchar> &buffer, uint len) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return -1; }
    if (!s->secured) { _LastError = 5274; return -1; }
    if (len > buffer.size()) len = (uint)buffer.size();
#ifdef TT_HARNESS_TLS
    if (!compat_tls_write(s->ssl, s->fd, buffer.data(), len)) { _LastError = 5273; return -1; }
#endif
    return (int)len;
}
// What is decrypted now, at most maxlen bytes; 0 when nothing is there (a
// regular situation), -1 with 5273 when the connection is gone.
inline int SocketTlsReadAvailable(int h, std::vector<uchar> &buffer, uint maxlen) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return -1; }
    if (!s->secured) { _LastError = 5274; return -1; }
    s->speculative = true;
    int n = -1;
#ifdef TT_HARNESS_TLS
    n = compat_tls_read(s->ssl, buffer, maxlen);
#else
    (void)buffer;
    (void)maxlen;
#endif
    if (n < 0) { s->peer_closed = true; _LastError = 5273; }
    return n;
}
inline bool compat_probe_closed(CompatSock *s) {
    if (s->fd < 0) return true;
    if (s->peer_closed) return true;
    char c;
    ssize_t n = recv(s->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) s->peer_closed = true;
    return s->peer_closed;
}
inline bool SocketIsConnected(int h) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return false; }
    return !compat_probe_closed(s);
}
// Bytes waiting; on an empty buffer a speculative 1 (MQL5 book, "Checking
// socket status": the real check is deferred to the next read call, as a
// rule on the first call on a socket) unless the last answer already was a
// speculative 1 with no read since. 0 with 5273 when the connection is gone.
inline uint SocketIsReadable(int h) {
    CompatSock *s = compat_sock(h);
    if (!s || s->fd < 0) { _LastError = 5270; return 0; }
    int n = 0;
    if (ioctl(s->fd, FIONREAD, &n) == 0 && n > 0) return (uint)n;
    if (compat_probe_closed(s)) { _LastError = 5273; return 0; }
    if (s->speculative) { s->speculative = false; return 1; }
    return 0;
}
inline bool SocketIsWritable(int h) { CompatSock *s = compat_sock(h); return s && s->fd >= 0 && !s->peer_closed; }
// Waits until maxlen bytes arrived or timeout ms passed (0 = the default,
// 120 000 ms). Nothing within the timeout is -1, like a broken connection
// (both with 5273: only SocketIsConnected tells them apart). A secured
// socket is read with SocketTlsRead*.
inline int SocketRead(int h, std::vector<uchar> &buffer, uint maxlen, uint timeout) {
    CompatSock *s = compat_sock(h);
    if (!s || s->fd < 0) { _LastError = 5270; return -1; }
    if (s->secured) { _LastError = 5273; return -1; }
    if (timeout == 0) timeout = TT_COMPAT_DEFAULT_READ_MS;
    s->speculative = true;
    buffer.resize(maxlen);
    uint got = 0;
    uint start = GetTickCount();
    while (got < maxlen) {
        ssize_t n = recv(s->fd, buffer.data() + got, maxlen - got, MSG_DONTWAIT);
        if (n > 0) { got += (uint)n; continue; }
        if (n == 0) { s->peer_closed = true; break; }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { s->peer_closed = true; break; }
        uint waited = GetTickCount() - start;
        if (waited >= timeout) break;
        struct pollfd pf = {s->fd, POLLIN, 0};
        poll(&pf, 1, (int)(timeout - waited));
    }
    buffer.resize(got);
    if (got == 0) { _LastError = 5273; return -1; }
    return (int)got;
}
inline int SocketSend(int h, const std::vector<uchar> &buffer, uint len) {
    CompatSock *s = compat_sock(h);
    if (!s || s->fd < 0) { _LastError = 5270; return -1; }
    if (s->secured) { _LastError = 5273; return -1; }  // plain bytes into a TLS stream
    uint sent = 0;
    if (len > buffer.size()) len = (uint)buffer.size();
    while (sent < len) {
        ssize_t n = send(s->fd, buffer.data() + sent, len - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            _LastError = 5273;
            return -1;
        }
        sent += (uint)n;
    }
    return (int)sent;
}
inline bool SocketClose(int h) {
    CompatSock *s = compat_sock(h);
    if (!s) { _LastError = 5270; return false; }
#ifdef TT_HARNESS_TLS
    if (s->ssl) { SSL_shutdown(s->ssl); SSL_free(s->ssl); s->ssl = nullptr; }
#endif
    if (s->fd >= 0) close(s->fd);
    *s = CompatSock();
    return true;
}
#endif  // !TT_HARNESS_MT4

// ---------------------------------------------------------------- WebRequest
// HTTP/1.1 over a fresh connection per request (Connection: close). Returns
// the HTTP status, or -1 with: 4014 (MQL5 ERR_FUNCTION_NOT_ALLOWED) / 4060
// (MQL4 ERR_FUNCTION_NOT_CONFIRMED) when the URL is not in the allow-list,
// 5200 bad URL, 5201 cannot connect, 5202 timeout, 5203 request failed.
// result_headers: the response's header lines ("Name: value\r\n" each).
#ifdef TT_HARNESS_MT4
#define TT_COMPAT_ERR_URL_NOT_ALLOWED 4060
#else
#define TT_COMPAT_ERR_URL_NOT_ALLOWED 4014
#endif
inline int WebRequest(const string &method, const string &url, const string &headers, int timeout,
                      const std::vector<char> &data, std::vector<char> &result, string &result_headers) {
    CompatUrl cu = compat_parse_url(url.utf8());
    if (!cu.ok || (cu.scheme != "http" && cu.scheme != "https")) { _LastError = 5200; return -1; }
    if (!compat_url_allowed(cu)) { _LastError = TT_COMPAT_ERR_URL_NOT_ALLOWED; return -1; }
    bool tls = cu.scheme == "https";
#ifndef TT_HARNESS_TLS
    if (tls) { _LastError = 5203; return -1; }
#endif
    std::string hostport = cu.host;
    if (cu.port != (tls ? 443u : 80u)) hostport += ":" + std::to_string(cu.port);
    int fd = compat_connect(cu.host, compat_mapped_port(cu.port), (uint)timeout);
    if (fd < 0) { _LastError = 5201; return -1; }
#ifdef TT_HARNESS_TLS
    SSL *ssl = nullptr;
    if (tls && !(ssl = compat_tls_connect(fd, cu.host))) { close(fd); _LastError = 5203; return -1; }
    auto done = [&]() { if (ssl) { SSL_shutdown(ssl); SSL_free(ssl); } close(fd); };
#else
    auto done = [&]() { close(fd); };
#endif
    std::string hs = headers.utf8();
    std::string req = method.utf8() + " " + cu.path + " HTTP/1.1\r\nHost: " + hostport + "\r\nConnection: close\r\n";
    req += hs;
    if (!hs.empty() && hs.substr(hs.size() - 2) != "\r\n") req += "\r\n";
    req += "Content-Length: " + std::to_string(data.size()) + "\r\n\r\n";
    req.append(data.begin(), data.end());
#ifdef TT_HARNESS_TLS
    if (ssl && !compat_tls_write(ssl, fd, (const uchar *)req.data(), req.size())) { done(); _LastError = 5203; return -1; }
    size_t sent = ssl ? req.size() : 0;
#else
    size_t sent = 0;
#endif
    while (sent < req.size()) {
        ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) { done(); _LastError = 5203; return -1; }
        sent += (size_t)n;
    }
    std::string resp;
    uint start = GetTickCount();
    char buf[65536];
    for (;;) {
        uint waited = GetTickCount() - start;
        if (waited >= (uint)timeout) { done(); _LastError = 5202; return -1; }
#ifdef TT_HARNESS_TLS
        if (ssl) {
            std::vector<uchar> chunk;
            int n = compat_tls_read(ssl, chunk, sizeof buf);
            if (n < 0) break;
            if (n == 0) {
                struct pollfd pf = {fd, POLLIN, 0};
                poll(&pf, 1, (int)((uint)timeout - waited));
                continue;
            }
            resp.append(chunk.begin(), chunk.end());
        } else
#endif
        {
            struct pollfd pf = {fd, POLLIN, 0};
            if (poll(&pf, 1, (int)((uint)timeout - waited)) <= 0) continue;
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n < 0) { if (errno == EINTR) continue; done(); _LastError = 5203; return -1; }
            if (n == 0) break;
            resp.append(buf, (size_t)n);
        }
        // Stop early when Content-Length is satisfied (the server may keep the socket open).
        size_t he = resp.find("\r\n\r\n");
        if (he != std::string::npos) {
            std::string lower = resp.substr(0, he);
            for (auto &c : lower) c = (char)tolower((uchar)c);
            size_t cl = lower.find("content-length:");
            if (cl != std::string::npos && resp.size() - he - 4 >= (size_t)atol(lower.c_str() + cl + 15)) break;
        }
    }
    done();
    size_t he = resp.find("\r\n\r\n");
    if (resp.rfind("HTTP/1.", 0) != 0 || he == std::string::npos) { _LastError = 5203; return -1; }
    int status = atoi(resp.c_str() + 9);
    std::string head = resp.substr(0, he);
    std::string body = resp.substr(he + 4);
    std::string lower = head;
    for (auto &c : lower) c = (char)tolower((uchar)c);
    size_t cl = lower.find("content-length:");
    if (cl != std::string::npos) {
        size_t n = (size_t)atol(lower.c_str() + cl + 15);
        if (body.size() > n) body.resize(n);
    } else if (lower.find("transfer-encoding: chunked") != std::string::npos) {
        std::string out;
        size_t p = 0;
        for (;;) {
            size_t e = body.find("\r\n", p);
            if (e == std::string::npos) break;
            size_t n = strtoul(body.substr(p, e - p).c_str(), nullptr, 16);
            if (n == 0) break;
            out += body.substr(e + 2, n);
            p = e + 2 + n + 2;
        }
        body = out;
    }
    result.assign(body.begin(), body.end());
    size_t eol = head.find("\r\n");
    result_headers = string(eol == std::string::npos ? std::string() : head.substr(eol + 2) + "\r\n");
    return status;
}
