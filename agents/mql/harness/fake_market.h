// fake_market.h: what MetaTrader 4 and 5 share in the harness's fake
// terminal: a deterministic market (EURUSD, GBPUSD, USDJPY, XAUUSD; quotes
// are a function of time, a new one every 200 ms, so bars and tick history
// can be computed for any range; trade server time is UTC+2), the account's
// identity and permissions, and the part of the API that MQL4 and MQL5 both
// have with the same meaning (SymbolInfo*, CopyRates, TerminalInfo*,
// AccountInfoInteger/String, timers). The MQL5-only API is in
// fake_terminal.h, the MQL4-only API in fake_terminal4.h; a build includes
// one of them, never both, so MT4 code that calls an MQL5-only function does
// not compile.
//
// Scenarios the tests set (fake::M()): login_after_ms (ACCOUNT_LOGIN is 0
// until the account is authorised, as at a terminal's start), the account's
// trade permissions (ACCOUNT_TRADE_ALLOWED, ACCOUNT_TRADE_EXPERT), the
// terminal's and the expert's switches (TERMINAL_TRADE_ALLOWED,
// MQL_TRADE_ALLOWED).
#pragma once

#include "mql_compat.h"

#include <functional>
#include <map>

// ---------------------------------------------------------------- constants
enum ENUM_TIMEFRAMES { PERIOD_CURRENT = 0, PERIOD_M1 = 1, PERIOD_M5 = 5, PERIOD_M15 = 15, PERIOD_M30 = 30, PERIOD_H1 = 16385, PERIOD_H4 = 16388, PERIOD_D1 = 16408, PERIOD_W1 = 32769, PERIOD_MN1 = 49153 };
enum ENUM_DAY_OF_WEEK { SUNDAY, MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY, SATURDAY };
enum ENUM_ACCOUNT_TRADE_MODE { ACCOUNT_TRADE_MODE_DEMO, ACCOUNT_TRADE_MODE_CONTEST, ACCOUNT_TRADE_MODE_REAL };
enum ENUM_ACCOUNT_INFO_INTEGER {
    ACCOUNT_LOGIN, ACCOUNT_TRADE_MODE, ACCOUNT_LEVERAGE, ACCOUNT_TRADE_ALLOWED, ACCOUNT_TRADE_EXPERT,
#ifndef TT_HARNESS_MT4
    ACCOUNT_MARGIN_MODE,  // MQL5 only (netting, exchange, hedging)
#endif
};
enum ENUM_ACCOUNT_INFO_DOUBLE { ACCOUNT_BALANCE, ACCOUNT_EQUITY, ACCOUNT_MARGIN, ACCOUNT_MARGIN_FREE, ACCOUNT_MARGIN_LEVEL, ACCOUNT_PROFIT };
enum ENUM_ACCOUNT_INFO_STRING { ACCOUNT_NAME, ACCOUNT_SERVER, ACCOUNT_COMPANY, ACCOUNT_CURRENCY };
enum ENUM_TERMINAL_INFO_INTEGER { TERMINAL_BUILD, TERMINAL_TRADE_ALLOWED, TERMINAL_CONNECTED };
enum ENUM_TERMINAL_INFO_STRING { TERMINAL_DATA_PATH, TERMINAL_NAME };
enum ENUM_MQL_INFO_INTEGER { MQL_TRADE_ALLOWED, MQL_TESTER };
enum ENUM_SYMBOL_INFO_INTEGER {
    SYMBOL_SELECT, SYMBOL_DIGITS, SYMBOL_TRADE_STOPS_LEVEL, SYMBOL_SWAP_MODE, SYMBOL_SWAP_ROLLOVER3DAYS, SYMBOL_TRADE_CALC_MODE, SYMBOL_TRADE_MODE,
#ifndef TT_HARNESS_MT4
    SYMBOL_FILLING_MODE,  // MQL5 only
    SYMBOL_EXPIRATION_MODE, SYMBOL_TRADE_EXEMODE,
#endif
};
enum ENUM_SYMBOL_INFO_DOUBLE { SYMBOL_BID, SYMBOL_ASK, SYMBOL_POINT, SYMBOL_TRADE_TICK_SIZE, SYMBOL_TRADE_TICK_VALUE, SYMBOL_TRADE_CONTRACT_SIZE, SYMBOL_VOLUME_MIN, SYMBOL_VOLUME_MAX, SYMBOL_VOLUME_STEP, SYMBOL_SWAP_LONG, SYMBOL_SWAP_SHORT };
enum ENUM_SYMBOL_INFO_STRING { SYMBOL_DESCRIPTION, SYMBOL_CURRENCY_BASE, SYMBOL_CURRENCY_PROFIT, SYMBOL_CURRENCY_MARGIN };

struct MqlTick { datetime time; double bid; double ask; double last; ulong volume; long time_msc; uint flags; double volume_real; };
struct MqlRates { datetime time; double open; double high; double low; double close; long tick_volume; int spread; long real_volume; };

template <class T> void ZeroMemory(T &x) { x = T(); }

// ---------------------------------------------------------------- the fake market
namespace fake {

const long kServerOffset = 7200;  // trade server time = UTC + 2 h
const long kStepMs = 200;         // a new quote every 200 ms
const int kCalcForex = 0;         // calc_mode: margin in the base currency
const int kCalcCfdLeverage = 5;   // calc_mode: margin from price and leverage

struct Sym {
    std::string name, desc, base, profit, margin;
    int digits; double contract; double base_price; int spread_points; int calc_mode; double phase; bool selected;
};

struct Market {
    std::vector<Sym> syms;
    long leverage = 100;
    int trade_mode = ACCOUNT_TRADE_MODE_DEMO;
    // The terminal's Algo Trading / AutoTrading button and the expert's
    // "Allow algo trading" / "Allow live trading" property.
    bool terminal_trade_allowed = true, mql_trade_allowed = true;
    // Permissions the broker sets on the account.
    bool account_trade_allowed = true, account_trade_expert = true;
    long login = 0;
    long login_after_ms = 0;  // ACCOUNT_LOGIN reads 0 until this long after start
    long started_ms = now_utc_ms();
    std::string server, company = "tradeterm harness";
    // MQL5 only: ACCOUNT_MARGIN_MODE (0 netting, 2 hedging) and per-symbol
    // SYMBOL_FILLING_MODE / SYMBOL_EXPIRATION_MODE flags a test may override.
    long margin_mode = 2;
    std::map<std::string, long> filling_flags, expiration_flags;
    // SYMBOL_FILLING_FOK|IOC (gold: FOK only); every expiration mode (gold: no SPECIFIED_DAY).
    long filling_of(const Sym &s) const {
        auto it = filling_flags.find(s.name);
        return it != filling_flags.end() ? it->second : (s.name == "XAUUSD" ? 1 : 3);
    }
    long expiration_of(const Sym &s) const {
        auto it = expiration_flags.find(s.name);
        return it != expiration_flags.end() ? it->second : (s.name == "XAUUSD" ? 7 : 15);
    }

    Market() {
        syms.push_back({"EURUSD", "Euro vs US Dollar (\xe2\x82\xac/$)", "EUR", "USD", "EUR", 5, 100000, 1.08400, 12, kCalcForex, 0.0, true});
        syms.push_back({"GBPUSD", "Great Britain Pound vs US Dollar", "GBP", "USD", "GBP", 5, 100000, 1.26500, 15, kCalcForex, 1.0, true});
        syms.push_back({"USDJPY", "US Dollar vs Japanese Yen (\xe5\x86\x86)", "USD", "JPY", "USD", 3, 100000, 151.200, 14, kCalcForex, 2.0, true});
        syms.push_back({"XAUUSD", "Gold vs US Dollar", "XAU", "USD", "XAU", 2, 100, 2650.00, 30, kCalcCfdLeverage, 3.0, true});
    }

    long current_login() const { return now_utc_ms() - started_ms >= login_after_ms ? login : 0; }
    bool account_allows() const { return account_trade_allowed && account_trade_expert; }

    static long now_utc_ms() {
        struct timeval tv;
        gettimeofday(&tv, nullptr);
        return (long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    }
    static long now_server_ms() { return now_utc_ms() + kServerOffset * 1000; }

    const Sym *sym(const std::string &n) const {
        for (auto &s : syms) if (s.name == n) return &s;
        return nullptr;
    }
    static double point(const Sym &s) { return pow(10.0, -s.digits); }
    // Mid price at a quote step (server ms, floored to the step).
    static double mid(const Sym &s, long ms) {
        double t = (double)(ms / kStepMs);
        double x = 0.0015 * sin(t / 1500.0 + s.phase) + 0.0004 * sin(t / 97.0 + 2 * s.phase) + 0.0001 * sin(t / 7.0 + s.phase);
        return s.base_price * (1.0 + x);
    }
    static double bid_at(const Sym &s, long ms) {
        double p = point(s);
        return round((mid(s, ms) - s.spread_points * p / 2) / p) * p;
    }
    static double ask_at(const Sym &s, long ms) { return NormalizeDouble(bid_at(s, ms) + s.spread_points * point(s), s.digits); }
    static long step_of(long ms) { return ms / kStepMs * kStepMs; }

    // Value of one unit of `ccy` in USD.
    double usd(const std::string &ccy) const {
        if (ccy == "USD") return 1.0;
        long now = now_server_ms();
        for (auto &s : syms) {
            if (s.base == ccy && s.profit == "USD") return bid_at(s, now);
            if (s.profit == ccy && s.base == "USD") return 1.0 / bid_at(s, now);
        }
        return 1.0;
    }
    double margin_of(const Sym &s, double volume, double price) const {
        if (s.calc_mode == kCalcForex) return volume * s.contract * usd(s.base) / (double)leverage;
        return volume * s.contract * price * usd(s.profit) / (double)leverage;
    }
    // SL/TP of a `buy` position held at `ref` at least 10 points away.
    bool stops_ok(const Sym &s, bool buy, double ref, double sl, double tp) const {
        double dist = 10 * point(s);
        if (buy) return !(sl > 0 && sl > ref - dist) && !(tp > 0 && tp < ref + dist);
        return !(sl > 0 && sl < ref + dist) && !(tp > 0 && tp > ref - dist);
    }

    // ---- bars
    static long tf_seconds(ENUM_TIMEFRAMES tf) {
        switch (tf) {
        case PERIOD_M1: return 60; case PERIOD_M5: return 300; case PERIOD_M15: return 900; case PERIOD_M30: return 1800;
        case PERIOD_H1: return 3600; case PERIOD_H4: return 14400; case PERIOD_D1: return 86400; case PERIOD_W1: return 604800;
        default: return 0;
        }
    }
    // Open time (server seconds) of the bar containing t.
    static long bar_open(ENUM_TIMEFRAMES tf, long t) {
        if (tf == PERIOD_MN1) {
            time_t tt = (time_t)t; struct tm g; gmtime_r(&tt, &g);
            g.tm_mday = 1; g.tm_hour = 0; g.tm_min = 0; g.tm_sec = 0;
            return (long)timegm(&g);
        }
        if (tf == PERIOD_W1) {
            long day = (t >= 0 ? t / 86400 : (t - 86399) / 86400);
            long wd = ((day + 4) % 7 + 7) % 7;  // 0 = Sunday
            return (day - wd) * 86400;
        }
        long s = tf_seconds(tf);
        return t - ((t % s) + s) % s;
    }
    static long bar_next(ENUM_TIMEFRAMES tf, long open) {
        if (tf == PERIOD_MN1) {
            time_t tt = (time_t)open; struct tm g; gmtime_r(&tt, &g);
            g.tm_mon += 1;
            return (long)timegm(&g);
        }
        return open + tf_seconds(tf);
    }
    static long bar_prev(ENUM_TIMEFRAMES tf, long open) {
        if (tf == PERIOD_MN1) {
            time_t tt = (time_t)open; struct tm g; gmtime_r(&tt, &g);
            g.tm_mon -= 1;
            return (long)timegm(&g);
        }
        return open - tf_seconds(tf);
    }
    MqlRates make_bar(const Sym &s, ENUM_TIMEFRAMES tf, long open) const {
        long now = now_server_ms();
        long start = open * 1000, end = std::min(bar_next(tf, open) * 1000 - 1, now);
        MqlRates r{};
        r.time = open;
        r.open = bid_at(s, start);
        r.close = bid_at(s, end);
        r.high = std::max(r.open, r.close);
        r.low = std::min(r.open, r.close);
        for (int k = 1; k < 16; k++) {
            double b = bid_at(s, start + (end - start) * k / 16);
            r.high = std::max(r.high, b);
            r.low = std::min(r.low, b);
        }
        r.tick_volume = std::max(1L, (end - start) / kStepMs);
        r.spread = s.spread_points;
        return r;
    }
};

// The one market of the build: defined by fake_terminal.h (MT5: the MT5
// account model is the market) or fake_terminal4.h (MT4).
Market &M();

} // namespace fake

// ---------------------------------------------------------------- the API MQL4 and MQL5 share
static string _Symbol = "EURUSD";
inline datetime TimeCurrent() { return TimeGMT() + fake::kServerOffset; }

static int g_fake_timer_ms = 0;
inline bool EventSetMillisecondTimer(int ms) { g_fake_timer_ms = ms; return true; }
inline bool EventSetTimer(int s) { g_fake_timer_ms = s * 1000; return true; }
inline void EventKillTimer() { g_fake_timer_ms = 0; }

inline long TerminalInfoInteger(ENUM_TERMINAL_INFO_INTEGER p) {
    if (p == TERMINAL_BUILD) return 4755;
    if (p == TERMINAL_TRADE_ALLOWED) return fake::M().terminal_trade_allowed;
    return 1;
}
inline string TerminalInfoString(ENUM_TERMINAL_INFO_STRING p) {
    (void)p;
    const char *d = getenv("MQL_DATA_PATH");
    return string(d && *d ? d : "C:\\Users\\harness\\AppData\\Roaming\\MetaQuotes\\Terminal\\HARNESS");
}
inline long MQLInfoInteger(ENUM_MQL_INFO_INTEGER p) {
    if (p == MQL_TRADE_ALLOWED) return fake::M().mql_trade_allowed;
    return 0;
}
inline long AccountInfoInteger(ENUM_ACCOUNT_INFO_INTEGER p) {
    auto &m = fake::M();
    switch (p) {
    case ACCOUNT_LOGIN: return m.current_login();
    case ACCOUNT_TRADE_MODE: return m.trade_mode;
    case ACCOUNT_LEVERAGE: return m.leverage;
    case ACCOUNT_TRADE_ALLOWED: return m.account_trade_allowed;
    case ACCOUNT_TRADE_EXPERT: return m.account_trade_expert;
#ifndef TT_HARNESS_MT4
    case ACCOUNT_MARGIN_MODE: return m.margin_mode;  // 0 netting, 2 hedging
#endif
    }
    return 0;
}
inline string AccountInfoString(ENUM_ACCOUNT_INFO_STRING p) {
    switch (p) {
    case ACCOUNT_NAME: return "Harness Demo";
    case ACCOUNT_SERVER: return string(fake::M().server);
    case ACCOUNT_COMPANY: return string(fake::M().company);
    case ACCOUNT_CURRENCY: return "USD";
    }
    return "";
}
inline bool SymbolSelect(const string &name, bool select) {
    auto *s = const_cast<fake::Sym *>(fake::M().sym(name.utf8()));
    if (!s) { _LastError = 4301; return false; }
    s->selected = select;
    return true;
}
inline int SymbolsTotal(bool selected) {
    int n = 0;
    for (auto &s : fake::M().syms) if (!selected || s.selected) n++;
    return n;
}
inline string SymbolName(int pos, bool selected) {
    int n = 0;
    for (auto &s : fake::M().syms) {
        if (selected && !s.selected) continue;
        if (n == pos) return string(s.name);
        n++;
    }
    return "";
}
inline bool SymbolInfoTick(const string &symbol, MqlTick &tick) {
    tick = MqlTick();
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4301; return false; }
    long now = fake::Market::now_server_ms();
    long step = fake::Market::step_of(now);
    tick.bid = fake::Market::bid_at(*s, step);
    tick.ask = fake::Market::ask_at(*s, step);
    tick.time_msc = step;
    tick.time = step / 1000;
    return true;
}
inline double SymbolInfoDouble(const string &symbol, ENUM_SYMBOL_INFO_DOUBLE p) {
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4301; return 0; }
    long now = fake::Market::now_server_ms();
    switch (p) {
    case SYMBOL_BID: return fake::Market::bid_at(*s, now);
    case SYMBOL_ASK: return fake::Market::ask_at(*s, now);
    case SYMBOL_POINT: case SYMBOL_TRADE_TICK_SIZE: return fake::Market::point(*s);
    case SYMBOL_TRADE_TICK_VALUE: return fake::Market::point(*s) * s->contract * fake::M().usd(s->profit);
    case SYMBOL_TRADE_CONTRACT_SIZE: return s->contract;
    case SYMBOL_VOLUME_MIN: return 0.01;
    case SYMBOL_VOLUME_MAX: return 100;
    case SYMBOL_VOLUME_STEP: return 0.01;
    case SYMBOL_SWAP_LONG: return -6.5;
    case SYMBOL_SWAP_SHORT: return 1.2;
    }
    return 0;
}
inline long SymbolInfoInteger(const string &symbol, ENUM_SYMBOL_INFO_INTEGER p) {
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4301; return 0; }
    switch (p) {
    case SYMBOL_SELECT: return s->selected;
    case SYMBOL_DIGITS: return s->digits;
    case SYMBOL_TRADE_STOPS_LEVEL: return 10;
    case SYMBOL_SWAP_MODE: return 1;  // points
    case SYMBOL_SWAP_ROLLOVER3DAYS: return WEDNESDAY;
    case SYMBOL_TRADE_CALC_MODE: return s->calc_mode;
#ifndef TT_HARNESS_MT4
    case SYMBOL_FILLING_MODE: return fake::M().filling_of(*s);        // SYMBOL_FILLING_FOK | SYMBOL_FILLING_IOC
    case SYMBOL_EXPIRATION_MODE: return fake::M().expiration_of(*s);  // SYMBOL_EXPIRATION_GTC | DAY | SPECIFIED | SPECIFIED_DAY
    case SYMBOL_TRADE_EXEMODE: return 2;                               // SYMBOL_TRADE_EXECUTION_MARKET
#endif
    case SYMBOL_TRADE_MODE: return 4;
    }
    return 0;
}
inline string SymbolInfoString(const string &symbol, ENUM_SYMBOL_INFO_STRING p) {
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4301; return ""; }
    switch (p) {
    case SYMBOL_DESCRIPTION: return string(s->desc);
    case SYMBOL_CURRENCY_BASE: return string(s->base);
    case SYMBOL_CURRENCY_PROFIT: return string(s->profit);
    case SYMBOL_CURRENCY_MARGIN: return string(s->margin);
    }
    return "";
}
inline bool SymbolInfoSessionTrade(const string &symbol, ENUM_DAY_OF_WEEK day, uint index, datetime &from, datetime &to) {
    (void)day;
    if (!fake::M().sym(symbol.utf8()) || index > 0) return false;
    from = 0;
    to = 86400;
    return true;
}
inline int CopyRates(const string &symbol, ENUM_TIMEFRAMES tf, int start_pos, int count, std::vector<MqlRates> &out) {
    auto &t = fake::M();
    const fake::Sym *s = t.sym(symbol.utf8());
    out.clear();
    if (!s || count <= 0) { _LastError = 4401; return -1; }
    long open = fake::Market::bar_open(tf, fake::Market::now_server_ms() / 1000);
    for (int i = 0; i < start_pos; i++) open = fake::Market::bar_prev(tf, open);
    std::vector<MqlRates> rev;
    for (int i = 0; i < count; i++) { rev.push_back(t.make_bar(*s, tf, open)); open = fake::Market::bar_prev(tf, open); }
    out.assign(rev.rbegin(), rev.rend());
    return (int)out.size();
}
inline int CopyRates(const string &symbol, ENUM_TIMEFRAMES tf, datetime start_time, int count, std::vector<MqlRates> &out) {
    auto &t = fake::M();
    const fake::Sym *s = t.sym(symbol.utf8());
    out.clear();
    if (!s || count <= 0) { _LastError = 4401; return -1; }
    long now = fake::Market::now_server_ms() / 1000;
    if (start_time > now) start_time = now;
    long open = fake::Market::bar_open(tf, start_time);
    std::vector<MqlRates> rev;
    for (int i = 0; i < count; i++) { rev.push_back(t.make_bar(*s, tf, open)); open = fake::Market::bar_prev(tf, open); }
    out.assign(rev.rbegin(), rev.rend());
    return (int)out.size();
}
inline int CopyRates(const string &symbol, ENUM_TIMEFRAMES tf, datetime start_time, datetime stop_time, std::vector<MqlRates> &out) {
    auto &t = fake::M();
    const fake::Sym *s = t.sym(symbol.utf8());
    out.clear();
    if (!s) { _LastError = 4401; return -1; }
    long now = fake::Market::now_server_ms() / 1000;
    if (stop_time > now) stop_time = now;
    long open = fake::Market::bar_open(tf, start_time);
    if (open < start_time) open = fake::Market::bar_next(tf, open);
    for (; open <= stop_time && out.size() < 200000; open = fake::Market::bar_next(tf, open)) out.push_back(t.make_bar(*s, tf, open));
    return (int)out.size();
}
