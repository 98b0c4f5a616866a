// The harness driver: runs the MetaTrader agent sources (compiled as C++
// against mql_compat.h and fake_terminal.h) like a terminal would: OnInit,
// OnTimer every inp_TimerMs, OnTradeTransaction after trades, OnDeinit.
//
//   g++ -std=c++17 -I agents/mql/include -I agents/mql/harness
//       agents/mql/harness/main.cpp -o mt5-agent            (MT5 expert)
//   ... -DTT_HARNESS_MT4 -o mt4-agent                       (MT4 expert)
//   ... -DTT_HARNESS_BREAK='"symbol_spec"'                 (one command broken)
//
// Arguments: --url URL --key KEY [--transport ws|poll] [--allow-trading]
//            [--symbols EURUSD,GBPUSD] [--seconds N] [--stop-file PATH]
//            [--algo-off] [--login-after-ms N] [--account-trade-off]
//            [--account-expert-off]
// The terminal's allow-list is $MQL_ALLOWED_URLS (see mql_compat.h).
// Stops after N seconds, when the stop file appears, or on SIGTERM/SIGINT.
#include <csignal>

#ifdef TT_HARNESS_MT4
#include "fake_terminal4.h"
#include "../../mt4/TradetermAgent.mq4"
#else
#include "fake_terminal.h"
#include "../../mt5/TradetermAgent.mq5"
#endif

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int) { g_stop = 1; }

int main(int argc, char **argv) {
    double seconds = 0;
    std::string stop_file;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        std::string v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--url") { inp_GatewayUrl = string(v); i++; }
        else if (a == "--key") { inp_TerminalKey = string(v); i++; }
        else if (a == "--transport") {
#ifndef TT_HARNESS_MT4
            inp_Transport = v == "poll" ? TT_TRANSPORT_LONGPOLL : TT_TRANSPORT_WEBSOCKET;
#endif
            i++;
        }
        else if (a == "--allow-trading") inp_AllowTrading = true;
        else if (a == "--symbols") { inp_Symbols = string(v); i++; }
        else if (a == "--seconds") { seconds = atof(v.c_str()); i++; }
        else if (a == "--stop-file") { stop_file = v; i++; }
        else if (a == "--algo-off") { fake::M().terminal_trade_allowed = false; }
        else if (a == "--login-after-ms") { fake::M().login_after_ms = atol(v.c_str()); i++; }
        else if (a == "--account-trade-off") { fake::M().account_trade_allowed = false; }
        else if (a == "--account-expert-off") { fake::M().account_trade_expert = false; }
        else { fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
#ifndef TT_HARNESS_MT4
    fake::T().on_transaction = [](const MqlTradeTransaction &t, const MqlTradeRequest &req, const MqlTradeResult &res) {
        OnTradeTransaction(t, req, res);
    };
#endif
    if (OnInit() != INIT_SUCCEEDED) { fprintf(stderr, "OnInit failed\n"); return 1; }
    uint start = GetTickCount();
    while (!g_stop) {
        if (seconds > 0 && GetTickCount() - start >= (uint)(seconds * 1000)) break;
        if (!stop_file.empty() && access(stop_file.c_str(), F_OK) == 0) break;
        int period = g_fake_timer_ms > 0 ? g_fake_timer_ms : 50;
        uint t0 = GetTickCount();
#ifdef TT_HARNESS_MT4
        fake4::B().step();
        OnTick();
        OnTimer();
#else
        fake::T().step();
        fake::T().deliver();
        OnTick();
        OnTimer();
        fake::T().deliver();
#endif
        uint spent = GetTickCount() - t0;
        if ((int)spent < period) Sleep(period - (int)spent);
    }
    OnDeinit(0);
    return 0;
}
