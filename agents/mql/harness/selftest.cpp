// Unit checks of the shared MQL code where the real gateway cannot reach:
// JSON edge cases, WebSocket frames the gateway never sends (fragmented
// messages with a ping in between, 16- and 64-bit lengths, masked server
// frames, close), the long-poll binding's retry and de-duplication rules
// against a scripted HTTP server, and the idempotency file.
//
//   g++ -std=c++17 -I agents/mql/include -I agents/mql/harness agents/mql/harness/selftest.cpp -o selftest && ./selftest
#include <sys/wait.h>

#include "fake_terminal.h"
#ifdef TT_HARNESS_MT4
#include "fake_terminal4.h"
#endif
#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>
#include <Tradeterm/WebSocket.mqh>
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
    g_hello = hello.s;
    return g_link_up;
}
bool TransportPump(TtStrings &outbox, TtStrings &inbox, const int waitMs) {
    (void)waitMs;
    for (auto &f : outbox.v) g_from_agent.push_back(f.s);
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
    CHECK(j.GetStr(0, "s", "").s == "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
    CHECK(j.GetLong(0, "big", 0) == 9007199254740993L);
    CHECK(j.IsObject(j.Get(0, "o")) && j.Count(j.Get(0, "o")) == 0);
    CHECK(!j.Has(0, "missing"));
    CHECK(j.Serialize(j.Get(0, "missing")).s == "null");  // a ping without ts must not crash
    CHECK(j.GetStr(-1, "x", "d").s == "d" && j.Count(-1) == 0 && j.At(-1, 0) == -1);
    // Serialising keeps member order and escapes again.
    TtJson k;
    CHECK(k.Parse("{\"b\":1,\"a\":\"x\\ty\",\"c\":[null,{\"d\":0.1}]}"));
    CHECK(k.Serialize(0).s == "{\"b\":1,\"a\":\"x\\ty\",\"c\":[null,{\"d\":0.1}]}");
    // Malformed input is refused, never crashes.
    const char *bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "\"\\x\"", "tru", "01x", "{\"a\":1}}", "\"a\nb\""};
    for (const char *b : bad) CHECK(!j.Parse(b));
    std::string deep(200, '[');
    CHECK(!j.Parse(string(deep)));
    // Writer.
    CHECK(JNum(1.08412).s == "1.08412");
    CHECK(JNum(0.1 + 0.2).s == "0.3");
    CHECK(JNum(10000).s == "10000");
    CHECK(JNum(-0.0).s == "0");
    CHECK(JNum(NAN).s == "null");
    CHECK(JStr("v1.2 entry...\x01").s == "\"v1.2 entry...\\u0001\"");
}

// A connected WebSocket client over a socketpair; `peer` is the server end.
static void ws_pair(TtWebSocket &ws, int &peer) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int h = SocketCreate();
    g_compat_socks[(size_t)h] = sv[0];
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
    CHECK(ArraySize(inbox.v) == 1 && inbox.v[0].s == "{\"type\":\"ping\",\"ts\":1}");
    int op = 0;
    std::string p;
    CHECK(read_client_frame(peer, op, p) && op == 10 && p == "hb");  // pong echoes the ping
    // 16- and 64-bit lengths, and a masked frame (tolerated).
    std::string mid(300, 'x'), large(70000, 'y');
    put(peer, frame(true, 1, mid));
    put(peer, frame(true, 1, large, true));
    ArrayResize(inbox.v, 0);
    for (int i = 0; i < 50 && ArraySize(inbox.v) < 2; i++) { ws.Poll(inbox); usleep(1000); }
    CHECK(ArraySize(inbox.v) == 2 && inbox.v[0].s == mid && inbox.v[1].s == large);
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
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].s == "R{\"kind\":\"trade\",\"comment\":\"tab\\there\"}");
    i = b.Find("close_position:k\t2");
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].s[0] == 'E');
    i = b.Find("reverse_position:k3");
    CHECK(i >= 0 && b.m_outcomes.v[(size_t)i].s == "P");  // started before a crash: never re-executed
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
    return j.Serialize(j.Get(0, "result")).s;
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

static void agent_checks() {
    FileDelete("tradeterm_idempotency_" + IntegerToString(TermLogin()) + ".txt");
    TtAgent a;
#ifndef TT_HARNESS_MT4
    fake::T().on_transaction = [&a](const MqlTradeTransaction &t) {
        string e = TermTransactionEvent(t);
        if (e != "") a.QueueEvent(e);
    };
#endif
    a.Configure("ws://gateway", "tt_term_secret", false, "EURUSD, GBPUSD", "selftest");
    a.OnTimer();
    TtJson h;
    CHECK(h.Parse(string(g_hello)));
    CHECK(h.GetStr(0, "type", "").s == "hello" && h.GetLong(0, "protocol_version", 0) == 1);
    CHECK(h.GetStr(0, "terminal_key", "").s == "tt_term_secret");
    CHECK(h.GetStr(h.Get(0, "terminal"), "platform", "") == TermPlatform());
    CHECK(h.GetStr(h.Get(0, "terminal"), "uid", "").s.size() == 64);
    CHECK(h.GetStr(h.Get(0, "account"), "trade_mode", "").s == "demo");
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
    // A new agent (a restart) reads the keys back from the file.
    TtAgent b;
    b.Configure("ws://gateway", "tt_term_secret", true, "EURUSD", "selftest");
    b.OnTimer();
    deliver(b, "{\"type\":\"welcome\",\"protocol_version\":1,\"terminal_id\":\"term_1\",\"heartbeat_interval_ms\":10000,\"heartbeat_timeout_ms\":30000}");
    CHECK(result_of(response(b, "t7", order)) == first);
    CHECK(open_positions() == 1);
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

int main() {
    signal(SIGPIPE, SIG_IGN);
    // Files (the idempotency store, the scripted server's log) go to $MQL_FILES_DIR.
    setenv("MQL_FILES_DIR", getenv("MQL_FILES_DIR") ? getenv("MQL_FILES_DIR") : "/tmp/tt-selftest-files", 1);
    json_checks();
    websocket_checks();
    longpoll_checks();
    idempotency_checks();
    agent_checks();
    if (g_failures) { fprintf(stderr, "%d check(s) failed\n", g_failures); return 1; }
    fprintf(stderr, "selftest: all checks passed\n");
    return 0;
}
