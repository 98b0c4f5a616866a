// Unit checks of the shared MQL code where the real gateway cannot reach:
// JSON edge cases, WebSocket frames the gateway never sends (fragmented
// messages with a ping in between, 16- and 64-bit lengths, masked server
// frames, close), the long-poll binding's retry and de-duplication rules
// against a scripted HTTP server, and the idempotency file.
//
//   g++ -std=c++17 -I agents/mql/include -I agents/mql/harness agents/mql/harness/selftest.cpp -o selftest && ./selftest
#include <sys/wait.h>

#ifdef TT_HARNESS_MT4
#include "fake_terminal4.h"
#else
#include "fake_terminal.h"
#endif
#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>
#ifndef TT_HARNESS_MT4
#include <Tradeterm/WebSocket.mqh>
#endif
#include <Tradeterm/LongPoll.mqh>
#ifdef TT_HARNESS_MT4
#include "../../mt4/Terminal4.mqh"
#else
#include "../../mt5/Terminal5.mqh"
#endif

// A scripted transport for the agent core: frames to deliver, frames sent.
static std::vector<std::string> g_to_agent, g_from_agent;
static std::string g_hello;
static bool g_link_up = true;
bool TransportIsPoll(void) { return false; }
string TransportName(void) { return "script"; }
string TransportError(void) { return "script closed"; }
bool TransportConnect(const string url, const string hello, TtStrings &inbox) {
    (void)url;
    (void)inbox;
    g_hello = hello.utf8();
    return g_link_up;
}
bool TransportPump(TtStrings &outbox, TtStrings &inbox, const int waitMs) {
    (void)waitMs;
    for (auto &f : outbox.v) g_from_agent.push_back(f.utf8());
    outbox.v.clear();
    for (auto &f : g_to_agent) inbox.v.push_back(string(f));
    g_to_agent.clear();
    return g_link_up;
}
void TransportClose(void) {}

#include <Tradeterm/Agent.mqh>

static int g_failures = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            g_failures++;                                                            \
        }                                                                            \
    } while (0)

static void json_checks() {
    TtJson j;
    CHECK(j.Parse(" {\"a\":[1,2.5,-3e2,true,false,null],\"s\":\"q\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\",\"big\":9007199254740993,\"o\":{}} "));
    CHECK(j.Count(j.Get(0, "a")) == 6);
    CHECK(j.Num(j.At(j.Get(0, "a"), 1)) == 2.5);
    CHECK(j.Num(j.At(j.Get(0, "a"), 2)) == -300);
    CHECK(j.Bool(j.At(j.Get(0, "a"), 3)));
    CHECK(j.Type(j.At(j.Get(0, "a"), 5)) == TT_JNULL);
    CHECK(j.GetStr(0, "s", "").utf8() == "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
    CHECK(j.GetLong(0, "big", 0) == 9007199254740993L);
    CHECK(j.IsObject(j.Get(0, "o")) && j.Count(j.Get(0, "o")) == 0);
    CHECK(!j.Has(0, "missing"));
    CHECK(j.Serialize(j.Get(0, "missing")).utf8() == "null");  // a ping without ts must not crash
    CHECK(j.GetStr(-1, "x", "d").utf8() == "d" && j.Count(-1) == 0 && j.At(-1, 0) == -1);
    // Serialising keeps member order and escapes again.
    TtJson k;
    CHECK(k.Parse("{\"b\":1,\"a\":\"x\\ty\",\"c\":[null,{\"d\":0.1}]}"));
    CHECK(k.Serialize(0).utf8() == "{\"b\":1,\"a\":\"x\\ty\",\"c\":[null,{\"d\":0.1}]}");
    // Malformed input is refused, never crashes.
    const char *bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "\"\\x\"", "tru", "01x", "{\"a\":1}}", "\"a\nb\""};
    for (const char *b : bad) CHECK(!j.Parse(b));
    std::string deep(200, '[');
    CHECK(!j.Parse(string(deep)));
    // Writer.
    CHECK(JNum(1.08412).utf8() == "1.08412");
    CHECK(JNum(0.1 + 0.2).utf8() == "0.3");
    CHECK(JNum(10000).utf8() == "10000");
    CHECK(JNum(-0.0).utf8() == "0");
    CHECK(JNum(NAN).utf8() == "null");
    CHECK(JStr("v1.2 entry...\x01").utf8() == "\"v1.2 entry...\\u0001\"");
}

#ifndef TT_HARNESS_MT4
// A connected WebSocket client over a socketpair; `peer` is the server end.
static void ws_pair(TtWebSocket &ws, int &peer) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int h = SocketCreate();
    g_compat_socks[(size_t)h].fd = sv[0];
    ws.m_sock = h;
    ws.m_open = true;
    peer = sv[1];
}

static std::vector<uchar> frame(bool fin, int op, const std::string &payload, bool masked = false) {
    std::vector<uchar> f;
    f.push_back((uchar)((fin ? 0x80 : 0) | op));
    size_t n = payload.size();
    uchar m = masked ? 0x80 : 0;
    if (n < 126) f.push_back((uchar)(m | n));
    else if (n < 65536) { f.push_back((uchar)(m | 126)); f.push_back((uchar)(n >> 8)); f.push_back((uchar)n); }
    else { f.push_back((uchar)(m | 127)); for (int i = 7; i >= 0; i--) f.push_back((uchar)(n >> (8 * i))); }
    uchar key[4] = {0x12, 0x34, 0x56, 0x78};
    if (masked) for (uchar k : key) f.push_back(k);
    for (size_t i = 0; i < n; i++) f.push_back((uchar)(payload[i] ^ (masked ? key[i % 4] : 0)));
    return f;
}

static void put(int fd, const std::vector<uchar> &b) { (void)!write(fd, b.data(), b.size()); }

// Reads one client frame from the server end and unmasks it.
static bool read_client_frame(int fd, int &op, std::string &payload) {
    uchar h[14];
    if (read(fd, h, 2) != 2) return false;
    op = h[0] & 15;
    if (!(h[1] & 0x80)) return false;  // clients must mask
    size_t n = h[1] & 127;
    if (n == 126) { uchar e[2]; if (read(fd, e, 2) != 2) return false; n = (size_t)e[0] << 8 | e[1]; }
    else if (n == 127) { uchar e[8]; if (read(fd, e, 8) != 8) return false; n = 0; for (uchar c : e) n = n << 8 | c; }
    uchar key[4];
    if (read(fd, key, 4) != 4) return false;
    payload.assign(n, 0);
    size_t got = 0;
    while (got < n) { ssize_t r = read(fd, &payload[got], n - got); if (r <= 0) return false; got += (size_t)r; }
    for (size_t i = 0; i < n; i++) payload[i] = (char)(payload[i] ^ key[i % 4]);
    return true;
}

static void websocket_checks() {
    TtWebSocket ws;
    int peer;
    ws_pair(ws, peer);
    TtStrings inbox;
    // A message in three fragments with a ping between them.
    std::vector<uchar> all;
    for (auto &f : {frame(false, 1, "{\"type\":"), frame(true, 9, "hb"), frame(false, 0, "\"ping\","), frame(true, 0, "\"ts\":1}")})
        all.insert(all.end(), f.begin(), f.end());
    // Split the bytes across two reads, mid-header.
    put(peer, std::vector<uchar>(all.begin(), all.begin() + 5));
    CHECK(ws.Poll(inbox));
    CHECK(ArraySize(inbox.v) == 0);
    put(peer, std::vector<uchar>(all.begin() + 5, all.end()));
    CHECK(ws.Poll(inbox));
    CHECK(ArraySize(inbox.v) == 1 && inbox.v[0].utf8() == "{\"type\":\"ping\",\"ts\":1}");
    int op = 0;
    std::string p;
    CHECK(read_client_frame(peer, op, p) && op == 10 && p == "hb");  // pong echoes the ping
    // 16- and 64-bit lengths, and a masked frame (tolerated).
    std::string mid(300, 'x'), large(70000, 'y');
    put(peer, frame(true, 1, mid));
    put(peer, frame(true, 1, large, true));
    ArrayResize(inbox.v, 0);
    for (int i = 0; i < 50 && ArraySize(inbox.v) < 2; i++) { ws.Poll(inbox); usleep(1000); }
    CHECK(ArraySize(inbox.v) == 2 && inbox.v[0].utf8() == mid && inbox.v[1].utf8() == large);
    // Sending: masked text frames with the right length encodings.
    CHECK(ws.SendText(string(large)));
    CHECK(read_client_frame(peer, op, p) && op == 1 && p == large);
    CHECK(ws.SendText("{}"));
    CHECK(read_client_frame(peer, op, p) && op == 1 && p == "{}");
    // Binary messages are skipped; close is answered with close.
    put(peer, frame(true, 2, "bin"));
    put(peer, frame(true, 8, std::string("\x03\xe8", 2)));
    ArrayResize(inbox.v, 0);
    CHECK(!ws.Poll(inbox));
    CHECK(ArraySize(inbox.v) == 0);
    CHECK(read_client_frame(peer, op, p) && op == 8);
    CHECK(!ws.IsOpen());
    close(peer);
    // A peer that goes away is noticed.
    TtWebSocket ws2;
    ws_pair(ws2, peer);
    close(peer);
    CHECK(!ws2.Poll(inbox));
}

#endif

// A scripted HTTP server: answers each request with the next canned reply
// (an empty reply closes the connection without answering) and writes the
// request bodies it saw to `log`.
static pid_t http_script(int &port, const std::vector<std::string> &replies, const std::string &log) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(ls, (sockaddr *)&a, sizeof a);
    listen(ls, 16);
    socklen_t len = sizeof a;
    getsockname(ls, (sockaddr *)&a, &len);
    port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid != 0) { close(ls); return pid; }
    FILE *out = fopen(log.c_str(), "w");
    for (const std::string &reply : replies) {
        int c = accept(ls, nullptr, nullptr);
        std::string req;
        char buf[4096];
        size_t want = std::string::npos;
        while (want == std::string::npos || req.size() < want) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0) break;
            req.append(buf, (size_t)n);
            size_t he = req.find("\r\n\r\n");
            if (he != std::string::npos && want == std::string::npos) {
                size_t cl = req.find("Content-Length: ");
                want = he + 4 + (cl == std::string::npos ? 0 : (size_t)atol(req.c_str() + cl + 16));
            }
        }
        size_t he = req.find("\r\n\r\n");
        fprintf(out, "%s %s\n", req.substr(0, req.find(' ', 5)).c_str(), he == std::string::npos ? "" : req.substr(he + 4).c_str());
        fflush(out);
        if (!reply.empty()) {
            std::string status = reply.substr(0, 3), body = reply.substr(4);
            std::string r = "HTTP/1.1 " + status + " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
            (void)!write(c, r.data(), r.size());
        }
        close(c);
    }
    fclose(out);
    _exit(0);
}

// ---------------------------------------------------------------- the header's model of MetaTrader
// Each check fails on the friendlier model the header had before (named in
// the comment), see agents/mql/README.md "What the harness models".

static inline long ms_since(ulong t0) { return (long)((GetMicrosecondCount() - t0) / 1000); }

// Strings are UTF-16 code units (before: UTF-8 bytes, StringLen("é€😀") was 9).
static void compat_string_utf16() {
    string s = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // é € 😀
    CHECK(StringLen(s) == 4);
    CHECK(StringGetCharacter(s, 0) == 0xE9 && StringGetCharacter(s, 1) == 0x20AC);
    CHECK(StringGetCharacter(s, 2) == 0xD83D && StringGetCharacter(s, 3) == 0xDE00);
    CHECK(StringSubstr(s, 1, 1) == "\xe2\x82\xac");
    CHECK(StringFind(s, "\xf0\x9f\x98\x80") == 2);
    CHECK(TtUtf8Len(s) == 9);
}

// StringToCharArray: code page conversion, the terminating zero with
// count -1, a dynamic array never shrunk, `count` elements without a zero
// (before: bytes copied as they were, a zero always added).
static void compat_string_to_char_array() {
    TtBytes b;
    CHECK(StringToCharArray("\xc3\xa9", b.v, 0, WHOLE_ARRAY, CP_UTF8) == 3);
    CHECK(ArraySize(b.v) == 3 && b.v[0] == 0xC3 && b.v[1] == 0xA9 && b.v[2] == 0);
    CHECK(StringToCharArray("\xc3\xa9\xe2\x82\xac", b.v, 0, WHOLE_ARRAY, CP_ACP) == 3);
    CHECK(b.v[0] == 0xE9 && b.v[1] == '?' && b.v[2] == 0);
    ArrayResize(b.v, 10);
    CHECK(StringToCharArray("ab", b.v) == 3 && ArraySize(b.v) == 10);
    CHECK(StringToCharArray("abc", b.v, 0, 1) == 1 && b.v[0] == 'a' && b.v[1] == 'b');
    TtBytes u;
    StringToCharArray("x\xf0\x9f\x98\x80y", u.v, 0, WHOLE_ARRAY, CP_UTF8);
    string back = CharArrayToString(u.v, 0, WHOLE_ARRAY, CP_UTF8);
    CHECK(StringLen(back) == 4 && back.utf8() == "x\xf0\x9f\x98\x80y");
    CHECK(CharArrayToString(u.v, 0, 1, CP_UTF8) == "x");
}

static std::string raw_file(const std::string &path) {
    FILE *f = fopen(path.c_str(), "rb");
    std::string r;
    if (!f) return r;
    int c;
    while ((c = fgetc(f)) != EOF) r += (char)c;
    fclose(f);
    return r;
}

// FILE_TXT|FILE_ANSI in the code page, FILE_TXT alone UTF-16LE, FILE_COMMON
// in the common folder (before: bytes written as they were, one folder).
static void compat_files() {
    string text = "caf\xc3\xa9 \xe2\x82\xac";
    int h = FileOpen("cp.txt", FILE_WRITE | FILE_TXT | FILE_ANSI, '\t', CP_UTF8);
    CHECK(h != INVALID_HANDLE);
    FileWriteString(h, text + "\r\n");
    FileClose(h);
    CHECK(raw_file(compat_files_dir() + "/cp.txt") == "caf\xc3\xa9 \xe2\x82\xac\r\n");
    h = FileOpen("cp.txt", FILE_READ | FILE_TXT | FILE_ANSI, '\t', CP_UTF8);
    CHECK(FileReadString(h) == text);
    FileClose(h);
    h = FileOpen("acp.txt", FILE_WRITE | FILE_TXT | FILE_ANSI);
    FileWriteString(h, text);
    FileClose(h);
    CHECK(raw_file(compat_files_dir() + "/acp.txt") == "caf\xe9 ?");
    h = FileOpen("uni.txt", FILE_WRITE | FILE_TXT);
    FileWriteString(h, "a\xc3\xa9");
    FileClose(h);
    CHECK(raw_file(compat_files_dir() + "/uni.txt") == std::string("\xff\xfe" "a\0\xe9\0", 6));
    h = FileOpen("uni.txt", FILE_READ | FILE_TXT);
    CHECK(FileReadString(h) == "a\xc3\xa9");
    FileClose(h);
    h = FileOpen("common.txt", FILE_WRITE | FILE_TXT | FILE_ANSI | FILE_COMMON);
    FileWriteString(h, "c");
    FileClose(h);
    CHECK(FileIsExist("common.txt", FILE_COMMON) && !FileIsExist("common.txt"));
    CHECK(raw_file(compat_common_dir() + "/common.txt") == "c");
}

static int listener(int &port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(ls, (sockaddr *)&a, sizeof a);
    listen(ls, 16);
    socklen_t len = sizeof a;
    getsockname(ls, (sockaddr *)&a, &len);
    port = ntohs(a.sin_port);
    return ls;
}

#ifndef TT_HARNESS_MT4
static int sock_over(int fd) {
    int h = SocketCreate();
    g_compat_socks[(size_t)h].fd = fd;
    return h;
}

// SocketRead with nothing arriving: -1 after the timeout, the connection
// still up (before: 0, as if a read of nothing succeeded).
static void compat_socket_read_timeout() {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int h = sock_over(sv[0]);
    TtBytes b;
    ulong t0 = GetMicrosecondCount();
    ResetLastError();
    CHECK(SocketRead(h, b.v, 16, 50) == -1);
    CHECK(ms_since(t0) >= 45);
    CHECK(GetLastError() == 5273);
    CHECK(SocketIsConnected(h));
    close(sv[1]);
    CHECK(SocketRead(h, b.v, 16, 50) == -1 && !SocketIsConnected(h));
    SocketClose(h);
}

// SocketIsReadable on an empty buffer: a speculative 1 first (before: 0).
static void compat_socket_readable_speculative() {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int h = sock_over(sv[0]);
    CHECK(SocketIsReadable(h) == 1);
    CHECK(SocketIsReadable(h) == 0);
    (void)!write(sv[1], "abc", 3);
    CHECK(SocketIsReadable(h) == 3);
    close(sv[1]);
    SocketClose(h);
}

// A timeout of 0 is the default 120 s, not "do not wait" (before: returned at once).
static void compat_socket_read_zero_timeout() {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid_t pid = fork();
    if (pid == 0) { usleep(300000); (void)!write(sv[1], "late", 4); _exit(0); }
    int h = sock_over(sv[0]);
    TtBytes b;
    ulong t0 = GetMicrosecondCount();
    CHECK(SocketRead(h, b.v, 4, 0) == 4);
    CHECK(ms_since(t0) >= 250);
    waitpid(pid, nullptr, 0);
    close(sv[1]);
    SocketClose(h);
}

// SocketConnect applies the allow-list: 4014 for a host:port not in it
// (before: every connection allowed).
static void compat_socket_allow_list() {
    int port = 0;
    int ls = listener(port);
    std::string saved = getenv("MQL_ALLOWED_URLS") ? getenv("MQL_ALLOWED_URLS") : "";
    setenv("MQL_ALLOWED_URLS", "https://gateway.example.com", 1);
    int h = SocketCreate();
    ResetLastError();
    CHECK(!SocketConnect(h, "127.0.0.1", (uint)port, 1000) && GetLastError() == 4014);
    setenv("MQL_ALLOWED_URLS", ("https://gateway.example.com, ws://127.0.0.1:" + std::to_string(port)).c_str(), 1);
    CHECK(SocketConnect(h, "127.0.0.1", (uint)port, 1000));
    SocketClose(h);
    close(ls);
    setenv("MQL_ALLOWED_URLS", saved.c_str(), 1);
}

// The advisor's read loop: an idle socket (speculative readable, read
// timeouts) is not a lost connection, a frame that comes late is read, a
// closed peer is noticed.
static void ws_timeout_is_not_a_disconnect() {
    TtWebSocket ws;
    int peer;
    ws_pair(ws, peer);
    TtStrings inbox;
    for (int i = 0; i < 20; i++) CHECK(ws.Poll(inbox));
    CHECK(ws.IsOpen());
    pid_t pid = fork();
    if (pid == 0) { usleep(150000); put(peer, frame(true, 1, "{\"late\":1}")); _exit(0); }
    ulong t0 = GetMicrosecondCount();
    while (ArraySize(inbox.v) == 0 && ms_since(t0) < 2000) { CHECK(ws.Poll(inbox)); usleep(20000); }
    CHECK(ArraySize(inbox.v) == 1 && inbox.v[0] == "{\"late\":1}");
    waitpid(pid, nullptr, 0);
    close(peer);
    CHECK(!ws.Poll(inbox));
}

#ifdef TT_HARNESS_TLS
// A TLS echo server on a free port ($MQL_SELFTEST_CERT / _KEY), one connection.
static pid_t tls_echo(int &port) {
    int ls = listener(port);
    pid_t pid = fork();
    if (pid != 0) { close(ls); return pid; }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate_file(ctx, getenv("MQL_SELFTEST_CERT"), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx, getenv("MQL_SELFTEST_KEY"), SSL_FILETYPE_PEM);
    int c = accept(ls, nullptr, nullptr);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
        char buf[4096];
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n > 0) SSL_write(ssl, buf, n);
        SSL_read(ssl, buf, sizeof buf);
    }
    _exit(0);
}

// Port 443: SocketConnect secures the socket itself; SocketTlsHandshake on
// it fails and plain SocketSend is refused (before: a plain socket that
// needed the handshake).
static void compat_socket_443_is_secured_by_connect() {
    if (!getenv("MQL_SELFTEST_CERT")) { fprintf(stderr, "SKIPPED compat_socket_443_is_secured_by_connect: no $MQL_SELFTEST_CERT\n"); return; }
    int port = 0;
    pid_t pid = tls_echo(port);
    std::string saved_allow = getenv("MQL_ALLOWED_URLS") ? getenv("MQL_ALLOWED_URLS") : "";
    std::string saved_map = getenv("MQL_PORT_MAP") ? getenv("MQL_PORT_MAP") : "";
    setenv("MQL_ALLOWED_URLS", "https://localhost", 1);
    setenv("MQL_PORT_MAP", ("443=" + std::to_string(port)).c_str(), 1);
    setenv("MQL_CA_FILE", getenv("MQL_SELFTEST_CERT"), 1);
    int h = SocketCreate();
    CHECK(SocketConnect(h, "localhost", 443, 2000));
    ResetLastError();
    CHECK(!SocketTlsHandshake(h, "localhost") && GetLastError() == 5274);
    TtBytes b;
    StringToCharArray("hi", b.v, 0, 2);
    CHECK(SocketSend(h, b.v, 2) == -1);
    CHECK(SocketTlsSend(h, b.v, 2) == 2);
    TtBytes got;
    ulong t0 = GetMicrosecondCount();
    int n = 0;
    while (n == 0 && ms_since(t0) < 2000) { n = SocketTlsReadAvailable(h, got.v, 16); usleep(5000); }
    CHECK(n == 2 && got.v[0] == 'h' && got.v[1] == 'i');
    SocketClose(h);
    waitpid(pid, nullptr, 0);
    // The advisor on port 443: no handshake of its own, the upgrade request
    // goes out over the terminal's TLS (the echo server sends it back: not
    // a 101, but proof that it went through).
    pid = tls_echo(port);
    setenv("MQL_PORT_MAP", ("443=" + std::to_string(port)).c_str(), 1);
    TtWebSocket ws;
    CHECK(!ws.Connect("wss://localhost/agent/v1", 2000));
    CHECK(StringFind(ws.error, "refused the WebSocket upgrade: GET /agent/v1 HTTP/1.1") >= 0);
    waitpid(pid, nullptr, 0);
    setenv("MQL_ALLOWED_URLS", saved_allow.c_str(), 1);
    setenv("MQL_PORT_MAP", saved_map.c_str(), 1);
}
#endif
#endif

// WebRequest: -1 with 4014 (MQL5) / 4060 (MQL4) for a URL not in the
// allow-list, the HTTP status and the response headers otherwise (before:
// every URL allowed).
static void compat_webrequest_allow_list() {
    int port = 0;
    std::string log = compat_files_dir() + "/selftest-wr.log";
    pid_t pid = http_script(port, {"404 {\"code\":\"NOT_FOUND\"}"}, log);
    std::string base = "http://127.0.0.1:" + std::to_string(port);
    std::string saved = getenv("MQL_ALLOWED_URLS") ? getenv("MQL_ALLOWED_URLS") : "";
    TtChars data, result;
    string headers;
    setenv("MQL_ALLOWED_URLS", "http://127.0.0.1", 1);  // port 80: not this one
    ResetLastError();
    CHECK(WebRequest("POST", string(base + "/x"), "", 1000, data.v, result.v, headers) == -1);
#ifdef TT_HARNESS_MT4
    CHECK(GetLastError() == 4060);
#else
    CHECK(GetLastError() == 4014);
#endif
    setenv("MQL_ALLOWED_URLS", (base + "/agent").c_str(), 1);  // a path prefix
    CHECK(WebRequest("POST", string(base + "/x"), "", 1000, data.v, result.v, headers) == -1);
    setenv("MQL_ALLOWED_URLS", base.c_str(), 1);
    CHECK(WebRequest("POST", string(base + "/x"), "", 1000, data.v, result.v, headers) == 404);
    CHECK(StringFind(headers, "Content-Type: application/json") >= 0 && StringFind(headers, "HTTP/1.1") < 0);
    CHECK(CharArrayToString(result.v, 0, WHOLE_ARRAY, CP_UTF8) == "{\"code\":\"NOT_FOUND\"}");
    waitpid(pid, nullptr, 0);
    // A server that never answers: -1 with 5202 (ERR_WEBREQUEST_TIMEOUT) after the timeout.
    int silent = 0;
    int ls = listener(silent);
    std::string quiet = "http://127.0.0.1:" + std::to_string(silent);
    setenv("MQL_ALLOWED_URLS", quiet.c_str(), 1);
    ulong t0 = GetMicrosecondCount();
    ResetLastError();
    CHECK(WebRequest("POST", string(quiet + "/x"), "", 200, data.v, result.v, headers) == -1 && GetLastError() == 5202);
    CHECK(ms_since(t0) >= 190 && ms_since(t0) < 2000);
    close(ls);
    setenv("MQL_ALLOWED_URLS", saved.c_str(), 1);
}

static void longpoll_checks() {
    int port = 0;
    std::string log = compat_files_dir() + "/selftest-poll.log";
    std::vector<std::string> replies = {
        "200 {\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_x\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000,\"session\":\"s1\",\"poll_wait_max_ms\":25000}",
        "200 {\"type\":\"batch\",\"ack\":1,\"frames\":[{\"type\":\"ping\",\"ts\":5,\"seq\":1},{\"type\":\"request\",\"id\":\"r1\",\"timeout_ms\":1000,\"command\":{\"cmd\":\"symbols\"},\"seq\":2}]}",
        "",  // reply lost
        "200 {\"type\":\"batch\",\"ack\":2,\"frames\":[{\"type\":\"request\",\"id\":\"r1\",\"timeout_ms\":1000,\"command\":{\"cmd\":\"symbols\"},\"seq\":2},{\"type\":\"ping\",\"ts\":6,\"seq\":3}]}",
        "404 {\"type\":\"error\",\"code\":\"SESSION_EXPIRED\",\"message\":\"gone\"}",
    };
    pid_t pid = http_script(port, replies, log);
    setenv("MQL_ALLOWED_URLS", ("http://127.0.0.1:" + std::to_string(port)).c_str(), 1);
    TtLongPoll poll;
    TtStrings inbox, outbox;
    string url = string("http://127.0.0.1:") + IntegerToString(port);
    CHECK(poll.Open(url, "{\"type\":\"hello\"}", inbox, 2000));
    CHECK(ArraySize(inbox.v) == 1 && StringFind(inbox.v[0], "\"welcome\"") >= 0);
    ArrayResize(inbox.v, 0);
    ArrayResize(outbox.v, 1);
    outbox.v[0] = "{\"type\":\"event\",\"event\":{\"kind\":\"tick\"}}";
    CHECK(poll.Exchange(outbox, inbox, 0, 2000));
    CHECK(ArraySize(inbox.v) == 2);
    // The answers go into a batch whose reply is lost: it must be re-sent as is.
    ArrayResize(inbox.v, 0);
    ArrayResize(outbox.v, 1);
    outbox.v[0] = "{\"type\":\"response\",\"id\":\"r1\"}";
    CHECK(poll.Exchange(outbox, inbox, 0, 2000));  // lost: true, batch kept
    CHECK(ArraySize(inbox.v) == 0 && ArraySize(outbox.v) == 0);
    CHECK(poll.Exchange(outbox, inbox, 0, 2000));
    // The re-sent request (seq 2) is not handed on again; the new ping is.
    CHECK(ArraySize(inbox.v) == 1 && StringFind(inbox.v[0], "\"ts\":6") >= 0);
    CHECK(!poll.Exchange(outbox, inbox, 0, 2000));  // 404: session over
    CHECK(!poll.IsOpen());
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *f = fopen(log.c_str(), "r");
    std::vector<std::string> lines;
    char line[8192];
    while (f && fgets(line, sizeof line, f)) lines.push_back(line);
    if (f) fclose(f);
    CHECK(lines.size() == 5);
    if (lines.size() == 5) {
        CHECK(lines[0].find("POST /agent/v1/poll/open") == 0);
        CHECK(lines[1].find("{\"seq\":1,\"ack\":0,\"wait_ms\":0,\"frames\":[{\"type\":\"event\"") != std::string::npos);
        CHECK(lines[2].find("{\"seq\":2,\"ack\":2,") != std::string::npos && lines[2].find("\"id\":\"r1\"") != std::string::npos);
        CHECK(lines[3] == lines[2]);  // the same seq, ack and frames again
        CHECK(lines[4].find("{\"seq\":3,\"ack\":3,\"wait_ms\":0,\"frames\":[]}") != std::string::npos);
    }
}

static void idempotency_checks() {
    FileDelete("idem.txt");
    TtIdem a;
    a.Load("idem.txt");
    a.Put("place_order:k1", "{\"cmd\":\"place_order\"}", "P");
    a.Put("place_order:k1", "{\"cmd\":\"place_order\"}", "R{\"kind\":\"trade\",\"comment\":\"tab\\there\"}");
    a.Put("close_position:k\t2", "{}", "E{\"code\":\"TRADE_REJECTED\"}");
    a.Put("reverse_position:k3", "{}", "P");
    TtIdem b;
    b.Load("idem.txt");
    CHECK(b.m_n == 3);
    int i = b.Find("place_order:k1");
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].utf8() == "R{\"kind\":\"trade\",\"comment\":\"tab\\there\"}");
    i = b.Find("close_position:k\t2");
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].utf8()[0] == 'E');
    i = b.Find("reverse_position:k3");
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].utf8() == "P");  // started before a crash: never re-executed
}

// Sent frames of a type (and containing `needle`).
static std::vector<std::string> sent(const std::string &type, const std::string &needle = "") {
    std::vector<std::string> out;
    for (auto &f : g_from_agent)
        if (f.find("\"type\":\"" + type + "\"") != std::string::npos && f.find(needle) != std::string::npos) out.push_back(f);
    return out;
}

static std::string deliver(TtAgent &a, const std::string &frame) {
    g_from_agent.clear();
    g_to_agent.push_back(frame);
    a.OnTimer();
    return g_from_agent.empty() ? "" : g_from_agent.back();
}

static std::string response(TtAgent &a, const std::string &id, const std::string &command) {
    deliver(a, "{\"type\":\"request\",\"id\":\"" + id + "\",\"timeout_ms\":5000,\"command\":" + command + "}");
    for (auto &f : g_from_agent)
        if (f.find("\"type\":\"response\",\"id\":\"" + id + "\"") != std::string::npos) return f;
    return "";
}

static std::string result_of(const std::string &response_frame) {
    TtJson j;
    if (!j.Parse(string(response_frame))) return "";
    return j.Serialize(j.Get(0, "result")).utf8();
}

static int open_positions() {
#ifdef TT_HARNESS_MT4
    int n = 0;
    for (auto &o : fake4::B().open) if (o.type <= OP_SELL) n++;
    return n;
#else
    return PositionsTotal();
#endif
}

// The hello waits until the account is logged in (ACCOUNT_LOGIN non-zero).
static void agent_waits_for_the_login() {
    auto &m = fake::M();
    m.started_ms = fake::Market::now_utc_ms();
    m.login_after_ms = 300;
    g_hello.clear();
    TtAgent a;
    a.Configure("ws://gateway", "tt_term_login", true, "EURUSD", "selftest");
    a.OnTimer();
    CHECK(g_hello.empty());
    CHECK(StringFind(a.StatusLine(), "waiting for the trade account to log in") >= 0);
    usleep(350000);
    a.OnTimer();
    TtJson h;
    CHECK(h.Parse(string(g_hello)));
    CHECK(h.GetLong(h.Get(0, "account"), "login", 0) == TermLogin() && TermLogin() != 0);
    m.login_after_ms = 0;
}

// An idempotency file that cannot be read: trading is refused until it can.
static void agent_refuses_trading_without_its_idempotency_file() {
    string file = "tradeterm_idempotency_" + StringSubstr(TtSha256Hex("tt_term_dir"), 0, 16) + ".txt";
    std::string path = compat_files_dir() + "/" + file.utf8();
    rmdir(path.c_str());
    mkdir(path.c_str(), 0700);  // FileOpen cannot open a directory
    TtAgent a;
    a.Configure("ws://gateway", "tt_term_dir", true, "EURUSD", "selftest");
    a.OnTimer();
    deliver(a, "{\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_d\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000}");
    CHECK(a.IsConnected() && !a.TradingEnabled());
    std::string r = response(a, "d1", "{\"cmd\":\"cancel_order\",\"ticket\":1}");
    CHECK(r.find("TRADING_DISABLED") != std::string::npos && r.find("idempotency file") != std::string::npos);
    rmdir(path.c_str());
    a.OnTimer();
    CHECK(a.TradingEnabled());
}

static void agent_checks() {
    TtAgent a;
    FileDelete("tradeterm_idempotency_" + StringSubstr(TtSha256Hex("tt_term_secret"), 0, 16) + ".txt");
#ifndef TT_HARNESS_MT4
    fake::T().on_transaction = [&a](const MqlTradeTransaction &t, const MqlTradeRequest &req, const MqlTradeResult &res) {
        string e = TermTransactionEvent(t, req, res);
        if (e != "") a.QueueEvent(e);
    };
#endif
    a.Configure("ws://gateway", "tt_term_secret", false, "EURUSD, GBPUSD", "selftest");
    a.OnTimer();
    TtJson h;
    CHECK(h.Parse(string(g_hello)));
    CHECK(h.GetStr(0, "type", "").utf8() == "hello" && h.GetLong(0, "protocol_version", 0) == 1);
    CHECK(h.GetStr(0, "terminal_key", "").utf8() == "tt_term_secret");
    CHECK(h.GetStr(h.Get(0, "terminal"), "platform", "") == TermPlatform());
    CHECK(h.GetStr(h.Get(0, "terminal"), "uid", "").utf8().size() == 64);
    CHECK(h.GetStr(h.Get(0, "account"), "trade_mode", "").utf8() == "demo");
    CHECK(!h.GetBool(h.Get(0, "permissions"), "allow_trading", true));
    CHECK(h.GetBool(h.Get(0, "permissions"), "automated_trading", false));
    deliver(a, "{\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_1\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000}");
    CHECK(a.IsConnected());
    // Ticks of both symbols and an account snapshot follow the welcome (on the next timer tick).
    g_from_agent.clear();
    a.OnTimer();
    CHECK(sent("event", "\"symbol\":\"EURUSD\"").size() == 1 && sent("event", "\"symbol\":\"GBPUSD\"").size() == 1);
    CHECK(sent("event", "\"kind\":\"account\"").size() == 1);
    // Heartbeats echo ts.
    CHECK(deliver(a, "{\"type\":\"ping\",\"ts\":1763790000123}").find("{\"type\":\"pong\",\"ts\":1763790000123}") != std::string::npos);
    // The agent refuses trades itself while its input is off.
    std::string order = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY\",\"volume\":0.1,\"comment\":\"v1.2 entry...\",\"idempotency_key\":\"k1\"}}";
    std::string r = response(a, "t1", order);
    CHECK(r.find("TRADING_DISABLED") != std::string::npos && r.find("inp_AllowTrading") != std::string::npos);
    CHECK(open_positions() == 0);
    CHECK(response(a, "u1", "{\"cmd\":\"frobnicate\"}").find("UNKNOWN_COMMAND") != std::string::npos);
    CHECK(response(a, "u2", "{\"cmd\":\"tick\",\"symbol\":\"NOPE\"}").find("NOT_FOUND") != std::string::npos);
    // Switching the input on is reported, then trades run once per key.
    a.m_allowTrading = true;
    g_from_agent.clear();
    a.OnTimer();
    CHECK(sent("event", "\"kind\":\"permissions\",\"allow_trading\":true,\"automated_trading\":true").size() == 1);
#ifdef TT_HARNESS_MT4
    TtTradeWatch w;
    TtStrings events;
    w.Poll(events);
    CHECK(ArraySize(events.v) == 0);
#endif
    std::string first = result_of(response(a, "t2", order));
    CHECK(first.find("\"kind\":\"trade\"") != std::string::npos && first.find("\"retcode\":\"done\"") != std::string::npos);
    CHECK(open_positions() == 1);
#ifdef TT_HARNESS_MT4
    // Trade events from comparing the order book between timer ticks.
    w.Poll(events);
    CHECK(ArraySize(events.v) == 1 && StringFind(events.v[0], "\"deal_added\"") >= 0 && StringFind(events.v[0], "\"entry\":\"in\"") >= 0);
#else
    // OnTradeTransaction → a trade_transaction event with the entry deal.
    g_from_agent.clear();
    fake::T().deliver();
    a.OnTimer();
    CHECK(sent("event", "\"transaction\":\"deal_added\"").size() == 1);
    CHECK(sent("event", "\"entry\":\"in\"").size() == 1);
#endif
    std::string again = result_of(response(a, "t3", order));
    CHECK(again == first);
    CHECK(open_positions() == 1);
    std::string other = order;
    other.replace(other.find("0.1"), 3, "0.2");
    CHECK(response(a, "t4", other).find("already used for a different request") != std::string::npos);
    // Rejections carry the trade server's reason and are remembered too.
    std::string bad = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY\",\"volume\":0.1,\"stop_loss\":5,\"idempotency_key\":\"k2\"}}";
    std::string rej = response(a, "t5", bad);
    CHECK(rej.find("TRADE_REJECTED") != std::string::npos && rej.find("\"retcode\":\"invalid_stops\"") != std::string::npos);
    CHECK(response(a, "t6", bad) == std::string(rej).replace(rej.find("t5"), 2, "t6"));
    // Non-ASCII text round-trips (MQL strings are UTF-16, the wire is UTF-8);
    // the key limit counts bytes: 128 x "é" is 256 bytes, 129 x is too long.
    std::string e128;
    for (int i = 0; i < 128; i++) e128 += "\xc3\xa9";
    std::string utf = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"GBPUSD\",\"order_type\":\"BUY\",\"volume\":0.01,\"comment\":\"caf\xc3\xa9 \xe2\x9c\x93\",\"idempotency_key\":\"" + e128 + "\"}}";
    CHECK(result_of(response(a, "n1", utf)).find("\"retcode\":\"done\"") != std::string::npos);
#ifdef TT_HARNESS_MT4
    w.Poll(events);  // the new trade's entry deal
#endif
    CHECK(response(a, "n2", "{\"cmd\":\"positions\"}").find("\"comment\":\"caf\xc3\xa9 \xe2\x9c\x93\"") != std::string::npos);
    std::string utf129 = utf;
    utf129.replace(utf129.find(e128), 0, "\xc3\xa9");
    CHECK(response(a, "n3", utf129).find("1 to 256 bytes") != std::string::npos);
    CHECK(response(a, "n4", "{\"cmd\":\"symbol_spec\",\"symbol\":\"EURUSD\"}").find("Euro vs US Dollar (\xe2\x82\xac/$)") != std::string::npos);
    int before = open_positions();
    // The broker's account permissions switch trading off: the agent says so
    // (permissions event, TRADING_DISABLED naming the permission) and sends nothing.
    std::string order3 = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY\",\"volume\":0.01,\"idempotency_key\":\"k3\"}}";
    fake::M().account_trade_expert = false;
    g_from_agent.clear();
    a.OnTimer();
    CHECK(sent("event", "\"kind\":\"permissions\",\"allow_trading\":true,\"automated_trading\":false").size() == 1);
    r = response(a, "p1", order3);
    CHECK(r.find("TRADING_DISABLED") != std::string::npos && r.find("ACCOUNT_TRADE_EXPERT") != std::string::npos);
    fake::M().account_trade_expert = true;
    fake::M().account_trade_allowed = false;
    r = response(a, "p2", order3);
    CHECK(r.find("TRADING_DISABLED") != std::string::npos && r.find("ACCOUNT_TRADE_ALLOWED") != std::string::npos);
    CHECK(StringFind(a.StatusLine(), "trading OFF (the broker disabled trading") >= 0);
    fake::M().account_trade_allowed = true;
    CHECK(open_positions() == before);
    // A new agent (a restart) reads the keys back from the file, even while
    // ACCOUNT_LOGIN still reads 0 (the file is named after the terminal key).
    TtAgent b;
    fake::M().login_after_ms = 1000000000L;
    b.Configure("ws://gateway", "tt_term_secret", true, "EURUSD", "selftest");
    CHECK(b.m_idem.ready && b.m_idem.Find("place_order:k1") >= 0);
    fake::M().login_after_ms = 0;
    b.OnTimer();
    deliver(b, "{\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_1\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000}");
    CHECK(result_of(response(b, "t7", order)) == first);
    CHECK(open_positions() == before);
#ifdef TT_HARNESS_MT4
    TtJson pos;
    pos.Parse(string(first));
    long ticket = pos.GetLong(0, "position", 0);
    response(b, "t8", "{\"cmd\":\"close_position\",\"ticket\":" + std::to_string(ticket) + ",\"volume\":0.05}");
    ArrayResize(events.v, 0);
    w.Poll(events);
    // The closed part is an exit deal of the same position; the remainder is not a new entry.
    CHECK(ArraySize(events.v) == 1 && StringFind(events.v[0], "\"entry\":\"out\"") >= 0 &&
          StringFind(events.v[0], "\"position\":" + IntegerToString(ticket) + "}") >= 0);
#endif
    // The gateway revoking the key ends the connection.
    deliver(b, "{\"type\":\"error\",\"code\":\"AUTH_FAILED\",\"message\":\"revoked\"}");
    CHECK(!b.IsConnected());
    CHECK(StringFind(b.StatusLine(), "AUTH_FAILED") >= 0);
    CHECK(StringFind(b.StatusLine(), "tt_term_secret") < 0);
}

#ifndef TT_HARNESS_MT4
// The fake MT5 trade server as MetaTrader documents it for the later v1
// requests: TRADE_ACTION_MODIFY with nothing changed is 10025; a filling
// policy the symbol's SYMBOL_FILLING_MODE lacks is 10030 (RETURN never in
// market execution); an expiration mode SYMBOL_EXPIRATION_MODE lacks, or an
// expiry already past, is 10022; a stop-limit price on the wrong side of the
// stop is 10015; TRADE_ACTION_CLOSE_BY wants a hedging account and two
// opposite positions of one symbol (10013) and closes both at position_by's
// opening price; MarketBookGet/Release fail before MarketBookAdd.
static MqlTradeRequest pending_request(const char *symbol, ENUM_ORDER_TYPE type, double price) {
    MqlTradeRequest r{};
    r.action = TRADE_ACTION_PENDING;
    r.symbol = string(symbol);
    r.type = type;
    r.volume = 0.01;
    r.price = price;
    r.type_filling = ORDER_FILLING_RETURN;
    r.type_time = ORDER_TIME_GTC;
    return r;
}

static void fake_mt5_order_management() {
    auto &t = fake::T();
    MqlTick q;
    SymbolInfoTick("EURUSD", q);
    MqlTradeResult res;
    // Filling: FOK and IOC by SYMBOL_FILLING_MODE, RETURN not in market execution.
    MqlTradeRequest deal{};
    deal.action = TRADE_ACTION_DEAL; deal.symbol = "EURUSD"; deal.type = ORDER_TYPE_BUY; deal.volume = 0.01; deal.price = q.ask;
    deal.type_filling = ORDER_FILLING_RETURN;
    CHECK(!OrderSend(deal, res) && res.retcode == TRADE_RETCODE_INVALID_FILL);
    MqlTick g;
    SymbolInfoTick("XAUUSD", g);
    MqlTradeRequest gold = pending_request("XAUUSD", ORDER_TYPE_BUY_LIMIT, NormalizeDouble(g.ask * 0.9, 2));
    gold.type_filling = ORDER_FILLING_IOC;  // gold: SYMBOL_FILLING_FOK only
    CHECK(!OrderSend(gold, res) && res.retcode == TRADE_RETCODE_INVALID_FILL);
    MqlTradeCheckResult check;
    CHECK(!OrderCheck(gold, check) && check.retcode == TRADE_RETCODE_INVALID_FILL);
    // Expiration: a mode the symbol lacks, an expiry already past.
    gold.type_filling = ORDER_FILLING_RETURN;
    gold.type_time = ORDER_TIME_SPECIFIED_DAY;  // gold: no SYMBOL_EXPIRATION_SPECIFIED_DAY
    gold.expiration = TimeTradeServer() + 86400;
    CHECK(!OrderSend(gold, res) && res.retcode == TRADE_RETCODE_INVALID_EXPIRATION);
    MqlTradeRequest past = pending_request("EURUSD", ORDER_TYPE_BUY_LIMIT, NormalizeDouble(q.ask * 0.9, 5));
    past.type_time = ORDER_TIME_SPECIFIED;
    past.expiration = TimeTradeServer() - 1;
    CHECK(!OrderSend(past, res) && res.retcode == TRADE_RETCODE_INVALID_EXPIRATION);
    // Stop-limit: the limit below the stop of a buy, SL/TP from the limit.
    MqlTradeRequest sl = pending_request("EURUSD", ORDER_TYPE_BUY_STOP_LIMIT, NormalizeDouble(q.ask * 1.1, 5));
    sl.stoplimit = NormalizeDouble(q.ask * 1.12, 5);
    CHECK(!OrderSend(sl, res) && res.retcode == TRADE_RETCODE_INVALID_PRICE);
    sl.stoplimit = NormalizeDouble(q.ask * 1.05, 5);
    CHECK(OrderSend(sl, res) && res.retcode == TRADE_RETCODE_PLACED);
    ulong slTicket = res.order;
    CHECK(OrderSelect(slTicket) && OrderGetDouble(ORDER_PRICE_STOPLIMIT) == sl.stoplimit && OrderGetInteger(ORDER_TYPE) == ORDER_TYPE_BUY_STOP_LIMIT);
    // MODIFY: nothing changed is 10025; a change is done, expiry checked too.
    MqlTradeRequest m{};
    m.action = TRADE_ACTION_MODIFY; m.order = slTicket; m.price = sl.price; m.stoplimit = sl.stoplimit; m.type_time = ORDER_TIME_GTC;
    CHECK(!OrderSend(m, res) && res.retcode == TRADE_RETCODE_NO_CHANGES);
    m.stoplimit = NormalizeDouble(q.ask * 1.04, 5);
    CHECK(OrderSend(m, res) && res.retcode == TRADE_RETCODE_DONE);
    CHECK(OrderSelect(slTicket) && OrderGetDouble(ORDER_PRICE_STOPLIMIT) == m.stoplimit);
    m.type_time = ORDER_TIME_SPECIFIED;
    m.expiration = TimeTradeServer() - 10;
    CHECK(!OrderSend(m, res) && res.retcode == TRADE_RETCODE_INVALID_EXPIRATION);
    m.action = TRADE_ACTION_REMOVE;
    CHECK(OrderSend(m, res));
    // An order that expires leaves with ORDER_STATE_EXPIRED.
    MqlTradeRequest soon = pending_request("EURUSD", ORDER_TYPE_BUY_LIMIT, NormalizeDouble(q.ask * 0.9, 5));
    soon.type_time = ORDER_TIME_SPECIFIED;
    soon.expiration = TimeTradeServer() + 1;
    CHECK(OrderSend(soon, res) && res.retcode == TRADE_RETCODE_PLACED);
    ulong soonTicket = res.order;
    Sleep(2100);
    t.step();
    CHECK(!OrderSelect(soonTicket));
    HistorySelect(0, TimeTradeServer() + 1);
    CHECK(HistoryOrderGetInteger(soonTicket, ORDER_STATE) == ORDER_STATE_EXPIRED);
    // CLOSE_BY: opposite positions of one symbol on a hedging account only.
    deal.type_filling = ORDER_FILLING_FOK;
    CHECK(OrderSend(deal, res));
    ulong buy1 = res.order;
    CHECK(OrderSend(deal, res));
    ulong buy2 = res.order;
    MqlTradeRequest by{};
    by.action = TRADE_ACTION_CLOSE_BY; by.position = buy1; by.position_by = buy2;
    CHECK(!OrderSend(by, res) && res.retcode == TRADE_RETCODE_INVALID);  // the same side
    MqlTradeRequest sell = deal;
    sell.type = ORDER_TYPE_SELL; sell.price = q.bid;
    sell.symbol = "GBPUSD";
    CHECK(OrderSend(sell, res));
    ulong gbp = res.order;
    by.position_by = gbp;
    CHECK(!OrderSend(by, res) && res.retcode == TRADE_RETCODE_INVALID);  // another symbol
    sell.symbol = "EURUSD";
    CHECK(OrderSend(sell, res));
    ulong sell1 = res.order;
    by.position_by = sell1;
    t.margin_mode = ACCOUNT_MARGIN_MODE_RETAIL_NETTING;
    CHECK(!OrderSend(by, res) && res.retcode == TRADE_RETCODE_INVALID);  // a netting account
    t.margin_mode = ACCOUNT_MARGIN_MODE_RETAIL_HEDGING;
    CHECK(PositionSelectByTicket(sell1));
    double byOpen = PositionGetDouble(POSITION_PRICE_OPEN);
    CHECK(OrderSend(by, res) && res.retcode == TRADE_RETCODE_DONE && res.price == byOpen && res.volume == 0.01);
    CHECK(!PositionSelectByTicket(buy1) && !PositionSelectByTicket(sell1));
    CHECK(HistoryDealSelect(res.deal) && HistoryDealGetInteger(res.deal, DEAL_ENTRY) == DEAL_ENTRY_OUT_BY &&
          HistoryDealGetDouble(res.deal, DEAL_PRICE) == byOpen);
    for (ulong p : {buy2, gbp}) {
        MqlTradeRequest c{};
        CHECK(PositionSelectByTicket(p));
        c.action = TRADE_ACTION_DEAL; c.position = p; c.symbol = PositionGetString(POSITION_SYMBOL); c.volume = 0.01;
        c.type = PositionGetInteger(POSITION_TYPE) == POSITION_TYPE_BUY ? ORDER_TYPE_SELL : ORDER_TYPE_BUY;
        c.type_filling = ORDER_FILLING_FOK;
        CHECK(OrderSend(c, res));
    }
    // Depth of market: only between MarketBookAdd and MarketBookRelease.
    std::vector<MqlBookInfo> book;
    CHECK(!MarketBookGet("EURUSD", book) && GetLastError() == ERR_BOOKS_CANNOT_GET);
    CHECK(!MarketBookRelease("EURUSD") && GetLastError() == ERR_BOOKS_CANNOT_DELETE);
    CHECK(!MarketBookAdd("NOPE"));
    CHECK(MarketBookAdd("EURUSD") && MarketBookGet("EURUSD", book) && book.size() == 10);
    CHECK(book.front().type == BOOK_TYPE_SELL && book.back().type == BOOK_TYPE_BUY);
    for (size_t i = 1; i < book.size(); i++) CHECK(book[i - 1].price > book[i].price);
    CHECK(MarketBookRelease("EURUSD") && !MarketBookGet("EURUSD", book));
    t.deliver();
}
#endif

// The advisor's later v1 commands against the fake terminal: no change is
// no_changes, the platform's limits are NOT_SUPPORTED (MT4: stop-limit,
// depth of market) or invalid_request (close by on a netting MT5 account,
// two trades of one side).
static void agent_order_management() {
    FileDelete("tradeterm_idempotency_" + StringSubstr(TtSha256Hex("tt_term_om"), 0, 16) + ".txt");
    TtAgent a;
    a.Configure("ws://gateway", "tt_term_om", true, "EURUSD", "selftest");
    a.OnTimer();
    deliver(a, "{\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_om\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000}");
    CHECK(a.IsConnected() && a.TradingEnabled());
    double bid = 0, ask = 0;
    long tm = 0;
    TermQuote("EURUSD", bid, ask, tm);
    std::string price = JNum(NormalizeDouble(ask * 0.9, 5)).utf8();
    std::string placed = result_of(response(a, "o1", "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY_LIMIT\",\"volume\":0.01,\"price\":" + price + "}}"));
    TtJson pj;
    CHECK(pj.Parse(string(placed)));
    std::string ticket = std::to_string(pj.GetLong(0, "order", 0));
    std::string same = "{\"cmd\":\"modify_order\",\"ticket\":" + ticket + ",\"price\":" + price + ",\"expiration_mode\":\"GTC\"}";
    std::string r = response(a, "o2", same);
    CHECK(r.find("TRADE_REJECTED") != std::string::npos && r.find("\"retcode\":\"no_changes\"") != std::string::npos);
    std::string moved = JNum(NormalizeDouble(ask * 0.88, 5)).utf8();
    r = response(a, "o3", "{\"cmd\":\"modify_order\",\"ticket\":" + ticket + ",\"price\":" + moved + "}");
    CHECK(result_of(r).find("\"retcode\":\"done\"") != std::string::npos);
    CHECK(response(a, "o4", "{\"cmd\":\"orders\"}").find("\"price\":" + moved) != std::string::npos);
    CHECK(response(a, "o5", "{\"cmd\":\"modify_order\",\"ticket\":1,\"price\":1}").find("NOT_FOUND") != std::string::npos);
    CHECK(response(a, "o6", "{\"cmd\":\"modify_order\",\"ticket\":" + ticket + ",\"price\":" + moved + ",\"expiration_mode\":\"WEEK\"}").find("INVALID_ARGUMENT") != std::string::npos);
    std::string stopLimit = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY_STOP_LIMIT\",\"volume\":0.01,\"price\":" +
                            JNum(NormalizeDouble(ask * 1.1, 5)).utf8() + ",\"stop_limit_price\":" + JNum(NormalizeDouble(ask * 1.05, 5)).utf8() + "}}";
    std::string two = "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY\",\"volume\":0.01}}";
    TtJson b1, b2;
    CHECK(b1.Parse(string(result_of(response(a, "o7", two)))) && b2.Parse(string(result_of(response(a, "o8", two)))));
    std::string sameSide = "{\"cmd\":\"close_by\",\"ticket\":" + std::to_string(b1.GetLong(0, "position", 0)) + ",\"ticket_by\":" + std::to_string(b2.GetLong(0, "position", 0)) + "}";
    r = response(a, "o9", sameSide);
    CHECK(r.find("TRADE_REJECTED") != std::string::npos && r.find("\"retcode\":\"invalid_request\"") != std::string::npos);
    CHECK(response(a, "o10", "{\"cmd\":\"close_by\",\"ticket\":0,\"ticket_by\":0}").find("NOT_FOUND") != std::string::npos);
#ifdef TT_HARNESS_MT4
    CHECK(response(a, "m1", stopLimit).find("NOT_SUPPORTED") != std::string::npos);
    CHECK(response(a, "m2", "{\"cmd\":\"market_book_add\",\"symbol\":\"EURUSD\"}").find("NOT_SUPPORTED") != std::string::npos);
    CHECK(response(a, "m3", "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"EURUSD\",\"order_type\":\"BUY_LIMIT\",\"volume\":0.01,\"price\":" + price +
                                ",\"expiration_mode\":\"DAY\"}}").find("\"retcode\":\"invalid_expiration\"") != std::string::npos);
#else
    r = result_of(response(a, "m1", stopLimit));
    CHECK(r.find("\"retcode\":\"placed\"") != std::string::npos);
    CHECK(response(a, "m2", "{\"cmd\":\"orders\"}").find("\"order_type\":\"BUY_STOP_LIMIT\"") != std::string::npos);
    CHECK(response(a, "m3", "{\"cmd\":\"symbol_spec\",\"symbol\":\"XAUUSD\"}").find("\"expiration_modes\":[\"GTC\",\"DAY\",\"SPECIFIED\"],\"filling_modes\":[\"FOK\"]") != std::string::npos);
    // Gold lacks SPECIFIED_DAY and IOC: refused by the agent and by the server.
    std::string gold = JNum(NormalizeDouble(SymbolInfoDouble("XAUUSD", SYMBOL_ASK) * 0.9, 2)).utf8();
    CHECK(response(a, "m4", "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"XAUUSD\",\"order_type\":\"BUY_LIMIT\",\"volume\":0.01,\"price\":" + gold +
                                ",\"expiration_mode\":\"SPECIFIED_DAY\",\"expiration\":" + std::to_string((long)TimeGMT() * 1000 + 86400000) + "}}").find("\"retcode\":\"invalid_expiration\"") != std::string::npos);
    CHECK(response(a, "m5", "{\"cmd\":\"place_order\",\"order\":{\"symbol\":\"XAUUSD\",\"order_type\":\"BUY\",\"volume\":0.01,\"filling\":\"IOC\"}}").find("\"retcode\":\"invalid_fill\"") != std::string::npos);
    // A netting account refuses close by.
    fake::T().margin_mode = ACCOUNT_MARGIN_MODE_RETAIL_NETTING;
    r = response(a, "m6", sameSide);
    CHECK(r.find("\"retcode\":\"invalid_request\"") != std::string::npos && r.find("hedging") != std::string::npos);
    fake::T().margin_mode = ACCOUNT_MARGIN_MODE_RETAIL_HEDGING;
    CHECK(response(a, "m7", "{\"cmd\":\"market_book_get\",\"symbol\":\"EURUSD\"}").find("market_book_add first") != std::string::npos);
    CHECK(response(a, "m8", "{\"cmd\":\"market_book_add\",\"symbol\":\"EURUSD\"}").find("\"subscribed\":true") != std::string::npos);
    CHECK(response(a, "m9", "{\"cmd\":\"market_book_get\",\"symbol\":\"EURUSD\"}").find("\"levels\":[{\"type\":\"sell\"") != std::string::npos);
    CHECK(response(a, "m10", "{\"cmd\":\"market_book_release\",\"symbol\":\"EURUSD\"}").find("\"subscribed\":false") != std::string::npos);
    // The modification is reported from its TRADE_TRANSACTION_REQUEST.
    fake::T().on_transaction = [&a](const MqlTradeTransaction &t, const MqlTradeRequest &req, const MqlTradeResult &res) {
        string e = TermTransactionEvent(t, req, res);
        if (e != "") a.QueueEvent(e);
    };
    fake::T().deliver();  // the earlier requests' transactions
    a.OnTimer();
    r = response(a, "m11", "{\"cmd\":\"modify_order\",\"ticket\":" + ticket + ",\"price\":" + price + "}");
    CHECK(result_of(r).find("\"retcode\":\"done\"") != std::string::npos);
    fake::T().deliver();
    a.OnTimer();
    CHECK(sent("event", "\"transaction\":\"order_modified\",\"order\":" + ticket).size() == 1);
    fake::T().on_transaction = nullptr;
#endif
    response(a, "z1", "{\"cmd\":\"cancel_order\",\"ticket\":" + ticket + "}");
}

int main() {
    signal(SIGPIPE, SIG_IGN);
    // Files (the idempotency store, the scripted server's log) go to $MQL_FILES_DIR.
    setenv("MQL_FILES_DIR", getenv("MQL_FILES_DIR") ? getenv("MQL_FILES_DIR") : "/tmp/tt-selftest-files", 1);
    compat_string_utf16();
    compat_string_to_char_array();
    compat_files();
#ifndef TT_HARNESS_MT4
    compat_socket_read_timeout();
    compat_socket_readable_speculative();
    compat_socket_read_zero_timeout();
    compat_socket_allow_list();
#ifdef TT_HARNESS_TLS
    compat_socket_443_is_secured_by_connect();
#endif
    ws_timeout_is_not_a_disconnect();
#endif
    compat_webrequest_allow_list();
    json_checks();
#ifndef TT_HARNESS_MT4
    websocket_checks();
#endif
    longpoll_checks();
    idempotency_checks();
    agent_checks();
    agent_waits_for_the_login();
    agent_refuses_trading_without_its_idempotency_file();
#ifndef TT_HARNESS_MT4
    fake_mt5_order_management();
#endif
    agent_order_management();
    if (g_failures) { fprintf(stderr, "%d check(s) failed\n", g_failures); return 1; }
    fprintf(stderr, "selftest: all checks passed\n");
    return 0;
}
