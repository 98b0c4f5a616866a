// mql_compat.h: the MQL runtime functions the tradeterm agents call, mapped
// onto C++17 and POSIX so that the same .mqh/.mq5/.mq4 sources compile with
// g++ (see agents/mql/README.md, "The harness").
//
// What is mapped here:
//   - MQL types (uchar, ushort, uint, ulong, datetime, string) and the dynamic
//     array wrappers TtInts/TtLongs/TtDoubles/TtStrings/TtBytes/TtChars (in MQL
//     they are declared in Tradeterm/Platform.mqh with native `T v[]` arrays);
//   - string functions, ArrayResize/ArraySize/ArrayCopy, math, time;
//   - Socket* -> POSIX sockets, TLS through OpenSSL with -DTT_HARNESS_TLS;
//   - WebRequest -> a small HTTP/1.1 client over POSIX sockets (https:// with
//     -DTT_HARNESS_TLS);
//   - FileOpen & co. -> stdio in the directory $MQL_FILES_DIR (default ./files);
//   - CryptEncode (BASE64, SHA1, SHA256);
//   - Print/Comment -> stderr.
// The trade and market-data API is in fake_terminal.h.
#pragma once

#include <algorithm>
#include <cerrno>
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

// ---------------------------------------------------------------- string
// A thin wrapper over std::string with MQL's value semantics. Adding a number
// to a string is an error here (MQL converts implicitly, std::string would
// append a char): the shared code always converts with IntegerToString or
// DoubleToString, and this catches any place that forgets.
class string {
public:
    std::string s;
    string() {}
    string(const char *c) : s(c ? c : "") {}
    string(const std::string &x) : s(x) {}
    string &operator+=(const string &o) { s += o.s; return *this; }
    string &operator+=(const char *o) { s += o; return *this; }
    template <class T> string &operator+=(T) = delete;
    const char *c_str() const { return s.c_str(); }
};
inline string operator+(const string &a, const string &b) { return string(a.s + b.s); }
inline string operator+(const string &a, const char *b) { return string(a.s + b); }
inline string operator+(const char *a, const string &b) { return string(a + b.s); }
template <class T> string operator+(const string &, T) = delete;
template <class T> string operator+(T, const string &) = delete;
inline bool operator==(const string &a, const string &b) { return a.s == b.s; }
inline bool operator==(const string &a, const char *b) { return a.s == b; }
inline bool operator!=(const string &a, const string &b) { return a.s != b.s; }
inline bool operator!=(const string &a, const char *b) { return a.s != b; }
inline bool operator<(const string &a, const string &b) { return a.s < b.s; }
inline bool operator>(const string &a, const string &b) { return a.s > b.s; }

// ---------------------------------------------------------------- errors
static int _LastError = 0;
inline int GetLastError() { return _LastError; }
inline void ResetLastError() { _LastError = 0; }
inline void SetUserError(ushort e) { _LastError = 65536 + e; }

// ---------------------------------------------------------------- arrays
// In MQL these are classes with one public native dynamic array `v[]`.
struct TtInts { std::vector<int> v; };
struct TtLongs { std::vector<long> v; };
struct TtDoubles { std::vector<double> v; };
struct TtStrings { std::vector<string> v; };
struct TtBytes { std::vector<uchar> v; };
struct TtChars { std::vector<char> v; };

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
inline int StringLen(const string &s) { return (int)s.s.size(); }
inline string StringSubstr(const string &s, int start, int length = -1) {
    if (start < 0) start = 0;
    if (start >= (int)s.s.size()) return string();
    if (length < 0) return string(s.s.substr((size_t)start));
    return string(s.s.substr((size_t)start, (size_t)length));
}
inline int StringFind(const string &s, const string &match, int start = 0) {
    if (start < 0) start = 0;
    size_t p = s.s.find(match.s, (size_t)start);
    return p == std::string::npos ? -1 : (int)p;
}
inline ushort StringGetCharacter(const string &s, int pos) {
    if (pos < 0 || pos >= (int)s.s.size()) return 0;
    return (ushort)(uchar)s.s[(size_t)pos];
}
inline long StringToInteger(const string &s) { return strtol(s.s.c_str(), nullptr, 10); }
inline double StringToDouble(const string &s) { return strtod(s.s.c_str(), nullptr); }
inline string IntegerToString(long v, int str_len = 0, ushort fill = ' ') {
    std::string r = std::to_string(v);
    while ((int)r.size() < str_len) r.insert(r.begin(), (char)fill);
    return string(r);
}
inline string DoubleToString(double v, int digits = 8) {
    if (digits < 0) digits = 0;
    if (digits > 16) digits = 16;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", digits, v);
    return string(buf);
}
inline string ShortToString(ushort c) { return string(std::string(1, (char)c)); }
inline string CharToString(uchar c) { return string(std::string(1, (char)c)); }
inline bool StringAdd(string &s, const string &add) { s.s += add.s; return true; }
inline int StringReplace(string &s, const string &find, const string &repl) {
    if (find.s.empty()) return 0;
    int n = 0;
    size_t p = 0;
    while ((p = s.s.find(find.s, p)) != std::string::npos) {
        s.s.replace(p, find.s.size(), repl.s);
        p += repl.s.size();
        n++;
    }
    return n;
}
inline int StringSplit(const string &s, ushort sep, std::vector<string> &out) {
    out.clear();
    std::string cur;
    for (char c : s.s) {
        if ((uchar)c == sep) { out.push_back(string(cur)); cur.clear(); }
        else cur += c;
    }
    out.push_back(string(cur));
    return (int)out.size();
}
inline bool StringToUpper(string &s) { for (auto &c : s.s) c = (char)toupper((uchar)c); return true; }
inline bool StringToLower(string &s) { for (auto &c : s.s) c = (char)tolower((uchar)c); return true; }
// The harness keeps strings as UTF-8 bytes, so both code pages copy bytes.
template <class B>
int StringToCharArray(const string &text, std::vector<B> &array, int start = 0, int count = -1,
                      uint codepage = CP_ACP) {
    (void)codepage;
    size_t n = text.s.size();
    if (count >= 0 && (size_t)count < n) n = (size_t)count;
    if ((int)array.size() < start + (int)n + 1) array.resize((size_t)start + n + 1);
    for (size_t i = 0; i < n; i++) array[(size_t)start + i] = (B)text.s[i];
    array[(size_t)start + n] = 0;
    return (int)n + 1;
}
template <class B>
string CharArrayToString(const std::vector<B> &array, int start = 0, int count = -1, uint codepage = CP_ACP) {
    (void)codepage;
    std::string r;
    int end = (int)array.size();
    if (count >= 0 && start + count < end) end = start + count;
    for (int i = start; i < end; i++) {
        if (array[(size_t)i] == 0) break;
        r += (char)array[(size_t)i];
    }
    return string(r);
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
inline void Print(const string &s) { fprintf(stderr, "[agent] %s\n", s.c_str()); }
inline void Comment(const string &s) {
    if (s.s != g_compat_comment) {
        g_compat_comment = s.s;
        fprintf(stderr, "[chart] %s\n", s.c_str());
    }
}

// ---------------------------------------------------------------- files
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
static std::vector<FILE *> g_compat_files;
inline std::string compat_files_dir() {
    const char *d = getenv("MQL_FILES_DIR");
    std::string dir = d && *d ? d : "files";
    mkdir(dir.c_str(), 0700);
    return dir;
}
inline int FileOpen(const string &name, int flags, short delimiter = '\t', uint codepage = CP_ACP) {
    (void)delimiter;
    (void)codepage;
    std::string path = compat_files_dir() + "/" + name.s;
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
    g_compat_files.push_back(f);
    return (int)g_compat_files.size() - 1;
}
inline FILE *compat_file(int h) {
    if (h < 0 || h >= (int)g_compat_files.size()) return nullptr;
    return g_compat_files[(size_t)h];
}
inline void FileClose(int h) {
    FILE *f = compat_file(h);
    if (f) { fclose(f); g_compat_files[(size_t)h] = nullptr; }
}
inline void FileFlush(int h) { FILE *f = compat_file(h); if (f) fflush(f); }
inline bool FileIsEnding(int h) {
    FILE *f = compat_file(h);
    if (!f) return true;
    int c = fgetc(f);
    if (c == EOF) return true;
    ungetc(c, f);
    return false;
}
inline string FileReadString(int h, int length = -1) {
    (void)length;
    FILE *f = compat_file(h);
    std::string r;
    if (!f) return string();
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') break;
        if (c != '\r') r += (char)c;
    }
    return string(r);
}
inline uint FileWriteString(int h, const string &s, int length = -1) {
    (void)length;
    FILE *f = compat_file(h);
    if (!f) return 0;
    return (uint)fwrite(s.s.data(), 1, s.s.size(), f);
}
inline bool FileSeek(int h, long offset, int origin) {
    FILE *f = compat_file(h);
    return f && fseek(f, offset, origin) == 0;
}
inline bool FileIsExist(const string &name, int flags = 0) {
    (void)flags;
    struct stat st;
    return stat((compat_files_dir() + "/" + name.s).c_str(), &st) == 0;
}
inline bool FileDelete(const string &name, int flags = 0) {
    (void)flags;
    return unlink((compat_files_dir() + "/" + name.s).c_str()) == 0;
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

// ---------------------------------------------------------------- sockets
// MQL5's Socket* functions over POSIX TCP sockets. TLS (SocketTlsHandshake,
// SocketTlsSend, SocketTlsReadAvailable, https:// WebRequest) is mapped onto
// OpenSSL when built with -DTT_HARNESS_TLS -lssl -lcrypto, trusting the CA
// file $MQL_CA_FILE (the terminal trusts the Windows certificate store);
// without it SocketTlsHandshake fails with 5274 and https:// with 5200.
static std::vector<int> g_compat_socks;
#ifdef TT_HARNESS_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
static std::vector<SSL *> g_compat_ssl;
inline SSL *compat_ssl(int h) { return h >= 0 && h < (int)g_compat_ssl.size() ? g_compat_ssl[(size_t)h] : nullptr; }
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
inline int compat_fd(int h) { return h >= 0 && h < (int)g_compat_socks.size() ? g_compat_socks[(size_t)h] : -1; }
inline int SocketCreate(uint flags = 0) {
    (void)flags;
#ifdef TT_HARNESS_TLS
    g_compat_ssl.push_back(nullptr);
#endif
    g_compat_socks.push_back(-1);
    return (int)g_compat_socks.size() - 1;
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
inline bool SocketConnect(int h, const string &host, uint port, uint timeout) {
    if (h < 0 || h >= (int)g_compat_socks.size()) { _LastError = 5270; return false; }
    int fd = compat_connect(host.s, port, timeout);
    if (fd < 0) { _LastError = 5272; return false; }
    g_compat_socks[(size_t)h] = fd;
    return true;
}
inline bool SocketTimeouts(int h, uint send_ms, uint recv_ms) { (void)h; (void)send_ms; (void)recv_ms; return true; }
#ifdef TT_HARNESS_TLS
inline bool SocketTlsHandshake(int h, const string &host) {
    int fd = compat_fd(h);
    SSL *ssl = fd < 0 ? nullptr : compat_tls_connect(fd, host.s);
    if (!ssl) { _LastError = 5274; return false; }
    g_compat_ssl[(size_t)h] = ssl;
    return true;
}
inline int SocketTlsSend(int h, const std::vector<uchar> &buffer, uint len) {
    SSL *ssl = compat_ssl(h);
    if (!ssl) { _LastError = 5274; return -1; }
    if (len > buffer.size()) len = (uint)buffer.size();
    if (!compat_tls_write(ssl, compat_fd(h), buffer.data(), len)) { _LastError = 5273; return -1; }
    return (int)len;
}
inline int SocketTlsReadAvailable(int h, std::vector<uchar> &buffer, uint maxlen) {
    SSL *ssl = compat_ssl(h);
    if (!ssl) { _LastError = 5274; return -1; }
    int n = compat_tls_read(ssl, buffer, maxlen);
    if (n < 0) _LastError = 5273;
    return n;
}
#else
inline bool SocketTlsHandshake(int h, const string &host) { (void)h; (void)host; _LastError = 5274; return false; }
inline int SocketTlsSend(int h, const std::vector<uchar> &buffer, uint len) { (void)h; (void)buffer; (void)len; _LastError = 5274; return -1; }
inline int SocketTlsReadAvailable(int h, std::vector<uchar> &buffer, uint maxlen) { (void)h; (void)buffer; (void)maxlen; _LastError = 5274; return -1; }
#endif
inline bool SocketIsConnected(int h) {
    int fd = compat_fd(h);
    if (fd < 0) return false;
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLERR))) {
        char c;
        if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) return false;
    }
    return true;
}
inline uint SocketIsReadable(int h) {
    int fd = compat_fd(h);
    if (fd < 0) return 0;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 ? (uint)n : 0;
}
inline bool SocketIsWritable(int h) { return compat_fd(h) >= 0; }
inline int SocketRead(int h, std::vector<uchar> &buffer, uint maxlen, uint timeout) {
    int fd = compat_fd(h);
    if (fd < 0) { _LastError = 5270; return -1; }
    buffer.resize(maxlen);
    uint got = 0;
    uint start = GetTickCount();
    while (got < maxlen) {
        ssize_t n = recv(fd, buffer.data() + got, maxlen - got, MSG_DONTWAIT);
        if (n > 0) { got += (uint)n; continue; }
        if (n == 0) { _LastError = 5273; break; }
        if (errno != EAGAIN && errno != EWOULDBLOCK) { _LastError = 5273; break; }
        uint waited = GetTickCount() - start;
        if (waited >= timeout) break;
        struct pollfd pf = {fd, POLLIN, 0};
        poll(&pf, 1, (int)(timeout - waited));
    }
    buffer.resize(got);
    if (got == 0 && _LastError == 5273) return -1;
    return (int)got;
}
inline int SocketSend(int h, const std::vector<uchar> &buffer, uint len) {
    int fd = compat_fd(h);
    if (fd < 0) { _LastError = 5270; return -1; }
    uint sent = 0;
    if (len > buffer.size()) len = (uint)buffer.size();
    while (sent < len) {
        ssize_t n = send(fd, buffer.data() + sent, len - sent, MSG_NOSIGNAL);
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
#ifdef TT_HARNESS_TLS
    if (SSL *ssl = compat_ssl(h)) { SSL_shutdown(ssl); SSL_free(ssl); g_compat_ssl[(size_t)h] = nullptr; }
#endif
    int fd = compat_fd(h);
    if (fd >= 0) { close(fd); g_compat_socks[(size_t)h] = -1; }
    return true;
}

// ---------------------------------------------------------------- WebRequest
// HTTP/1.1 over a fresh connection per request (Connection: close), http:// only.
// Returns the status code, or -1 with 5200 (bad URL), 5201 (connect failed),
// 5202 (timeout) or 5203 (request failed), as MetaTrader does.
inline int WebRequest(const string &method, const string &url, const string &headers, int timeout,
                      const std::vector<char> &data, std::vector<char> &result, string &result_headers) {
    std::string u = url.s;
    bool tls = u.rfind("https://", 0) == 0;
#ifndef TT_HARNESS_TLS
    if (tls) { _LastError = 5200; return -1; }
#endif
    if (!tls && u.rfind("http://", 0) != 0) { _LastError = 5200; return -1; }
    u = u.substr(tls ? 8 : 7);
    size_t slash = u.find('/');
    std::string hostport = slash == std::string::npos ? u : u.substr(0, slash);
    std::string path = slash == std::string::npos ? "/" : u.substr(slash);
    std::string host = hostport;
    uint port = tls ? 443 : 80;
    size_t colon = hostport.rfind(':');
    if (colon != std::string::npos) { host = hostport.substr(0, colon); port = (uint)atoi(hostport.substr(colon + 1).c_str()); }
    int fd = compat_connect(host, port, (uint)timeout);
    if (fd < 0) { _LastError = 5201; return -1; }
#ifdef TT_HARNESS_TLS
    SSL *ssl = nullptr;
    if (tls && !(ssl = compat_tls_connect(fd, host))) { close(fd); _LastError = 5203; return -1; }
    auto done = [&]() { if (ssl) { SSL_shutdown(ssl); SSL_free(ssl); } close(fd); };
#else
    auto done = [&]() { close(fd); };
#endif
    std::string req = method.s + " " + path + " HTTP/1.1\r\nHost: " + hostport + "\r\nConnection: close\r\n";
    req += headers.s;
    if (!headers.s.empty() && headers.s.substr(headers.s.size() - 2) != "\r\n") req += "\r\n";
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
            std::string head = resp.substr(0, he);
            std::string lower = head;
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
    result_headers = string(head);
    return status;
}
