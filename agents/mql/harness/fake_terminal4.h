// fake_terminal4.h: the MQL4 trade and account API over the fake market of
// fake_market.h (an MT4 build sees no MQL5-only function), with MT4's own model: one list of orders (market trades
// and pending orders, each with a ticket), a history of closed trades and
// deleted orders, partial closes that give the remainder a new ticket with
// the comment "from #N" (and "to #M" on the closed part), "[sl]"/"[tp]"
// appended to the comment of trades closed by a stop, and MQL4 error codes
// from GetLastError.
#pragma once

#include "fake_market.h"

#define OP_BUY 0
#define OP_SELL 1
#define OP_BUYLIMIT 2
#define OP_SELLLIMIT 3
#define OP_BUYSTOP 4
#define OP_SELLSTOP 5
#define SELECT_BY_POS 0
#define SELECT_BY_TICKET 1
#define MODE_TRADES 0
#define MODE_HISTORY 1
#define MODE_TIME 5
#define MODE_BID 9
#define MODE_ASK 10
#define MODE_POINT 11
#define MODE_DIGITS 12
#define MODE_SPREAD 13
#define MODE_STOPLEVEL 14
#define MODE_LOTSIZE 15
#define MODE_TICKVALUE 16
#define MODE_TICKSIZE 17
#define MODE_SWAPLONG 18
#define MODE_SWAPSHORT 19
#define MODE_TRADEALLOWED 22
#define MODE_MINLOT 23
#define MODE_LOTSTEP 24
#define MODE_MAXLOT 25
#define MODE_SWAPTYPE 26
#define MODE_PROFITCALCMODE 27
#define MODE_MARGINCALCMODE 28
#define MODE_MARGINREQUIRED 32

namespace fake {
inline Market &M() {
    static Market m;
    if (m.server.empty()) { m.login = 2012345; m.server = "Tradeterm-Harness4"; }
    return m;
}
} // namespace fake

namespace fake4 {

struct O {
    long ticket; std::string symbol; int type; double lots; double open_price; long open_time; double close_price; long close_time;
    double sl, tp; long magic; std::string comment; double profit, swap, commission; long expiration;
};

struct Book {
    std::vector<O> open, history;
    O selected{};
    double balance = 10000.0;
    long next_ticket = 80000001;

    Book() {
        long t = fake::Market::now_server_ms() / 1000 - 86400;
        history.push_back({next_ticket++, "", 6, 0, 0, t, 0, t, 0, 0, 0, "deposit", balance, 0, 0, 0});
    }
    static fake::Market &M() { return fake::M(); }
    static long now() { return fake::Market::now_server_ms() / 1000; }
    static double bid(const fake::Sym &s) { return fake::Market::bid_at(s, fake::Market::now_server_ms()); }
    static double ask(const fake::Sym &s) { return fake::Market::ask_at(s, fake::Market::now_server_ms()); }
    double close_of(const O &o) const {
        const fake::Sym *s = M().sym(o.symbol);
        if (!s) return 0;
        return o.type == OP_BUY ? bid(*s) : ask(*s);
    }
    double profit_of(const O &o, double close) const {
        const fake::Sym *s = M().sym(o.symbol);
        if (!s || o.type > OP_SELL) return 0;
        double dir = o.type == OP_BUY ? 1 : -1;
        return round((close - o.open_price) * dir * s->contract * o.lots * M().usd(s->profit) * 100) / 100;
    }
    double floating() const { double f = 0; for (auto &o : open) if (o.type <= OP_SELL) f += profit_of(o, close_of(o)); return f; }
    double margin() const {
        double m = 0;
        for (auto &o : open) if (o.type <= OP_SELL) { const fake::Sym *s = M().sym(o.symbol); if (s) m += M().margin_of(*s, o.lots, o.open_price); }
        return round(m * 100) / 100;
    }
    double equity() const { return round((balance + floating()) * 100) / 100; }
    O *find_open(long ticket) { for (auto &o : open) if (o.ticket == ticket) return &o; return nullptr; }
    O live(const O &o) const {
        O c = o;
        if (c.type <= OP_SELL) { c.close_price = close_of(c); c.profit = profit_of(c, c.close_price); }
        else { const fake::Sym *s = M().sym(c.symbol); if (s) c.close_price = (c.type % 2 == 0) ? ask(*s) : bid(*s); }
        return c;
    }
    bool fail(int e) { _LastError = e; return false; }
    bool trade_allowed() { return M().terminal_trade_allowed && M().mql_trade_allowed; }
    // 133 ERR_TRADE_DISABLED when the broker disabled trading or expert trading on the account.
    bool account_refuses() { if (M().account_allows()) return false; _LastError = 133; return true; }
    bool volume_ok(double v) const {
        if (v < 0.01 - 1e-9 || v > 100 + 1e-9) return false;
        return fabs(v / 0.01 - round(v / 0.01)) < 1e-6;
    }
    bool stops_ok(const fake::Sym &s, bool buy, double ref, double sl, double tp) const {
        return M().stops_ok(s, buy, ref, sl, tp);
    }

    // Closes `lots` of open trade `ticket` at the market (or at `at` > 0, a close by).
    void close_part(long ticket, double lots, const char *mark, double at = 0) {
        for (size_t i = 0; i < open.size(); i++) {
            if (open[i].ticket != ticket) continue;
            O o = open[i];
            double px = at > 0 ? at : close_of(o);
            O closed = o;
            closed.lots = lots;
            closed.close_price = px;
            closed.close_time = now();
            closed.profit = profit_of(closed, px);
            balance = round((balance + closed.profit) * 100) / 100;
            open.erase(open.begin() + (long)i);
            if (lots < o.lots - 1e-9) {
                O rest = o;
                rest.ticket = next_ticket++;
                rest.lots = round((o.lots - lots) * 100) / 100;
                rest.comment = "from #" + std::to_string(o.ticket);
                closed.comment = "to #" + std::to_string(rest.ticket);
                open.push_back(rest);
            }
            if (mark) closed.comment += mark;
            history.push_back(closed);
            return;
        }
    }

    void step() {
        for (size_t i = 0; i < open.size();) {
            O &o = open[i];
            const fake::Sym *s = M().sym(o.symbol);
            if (o.type <= OP_SELL) {
                double px = close_of(o);
                bool buy = o.type == OP_BUY;
                bool sl = o.sl > 0 && (buy ? px <= o.sl : px >= o.sl);
                bool tp = o.tp > 0 && (buy ? px >= o.tp : px <= o.tp);
                if (sl || tp) { close_part(o.ticket, o.lots, sl ? "[sl]" : "[tp]"); continue; }
            } else {
                double b = bid(*s), a = ask(*s);
                bool hit = (o.type == OP_BUYLIMIT && a <= o.open_price) || (o.type == OP_SELLLIMIT && b >= o.open_price) ||
                           (o.type == OP_BUYSTOP && a >= o.open_price) || (o.type == OP_SELLSTOP && b <= o.open_price);
                if (hit) {
                    bool buy = o.type == OP_BUYLIMIT || o.type == OP_BUYSTOP;
                    o.type = buy ? OP_BUY : OP_SELL;
                    o.open_price = buy ? a : b;
                    o.open_time = now();
                }
            }
            i++;
        }
    }
};

inline Book &B() {
    static Book b;
    return b;
}

} // namespace fake4

inline int OrdersTotal() { return (int)fake4::B().open.size(); }
inline int OrdersHistoryTotal() { return (int)fake4::B().history.size(); }
inline bool OrderSelect(int index, int select, int pool = MODE_TRADES) {
    auto &b = fake4::B();
    if (select == SELECT_BY_TICKET) {
        for (auto &o : b.open) if (o.ticket == index) { b.selected = b.live(o); return true; }
        for (auto &o : b.history) if (o.ticket == index) { b.selected = o; return true; }
        _LastError = 4108;
        return false;
    }
    auto &list = pool == MODE_HISTORY ? b.history : b.open;
    if (index < 0 || index >= (int)list.size()) { _LastError = 4051; return false; }
    b.selected = pool == MODE_HISTORY ? list[(size_t)index] : b.live(list[(size_t)index]);
    return true;
}
inline int OrderTicket() { return (int)fake4::B().selected.ticket; }
inline int OrderType() { return fake4::B().selected.type; }
inline double OrderLots() { return fake4::B().selected.lots; }
inline double OrderOpenPrice() { return fake4::B().selected.open_price; }
inline datetime OrderOpenTime() { return fake4::B().selected.open_time; }
inline double OrderClosePrice() { return fake4::B().selected.close_price; }
inline datetime OrderCloseTime() { return fake4::B().selected.close_time; }
inline double OrderStopLoss() { return fake4::B().selected.sl; }
inline double OrderTakeProfit() { return fake4::B().selected.tp; }
inline double OrderProfit() { return fake4::B().selected.profit; }
inline double OrderSwap() { return fake4::B().selected.swap; }
inline double OrderCommission() { return fake4::B().selected.commission; }
inline int OrderMagicNumber() { return (int)fake4::B().selected.magic; }
inline datetime OrderExpiration() { return fake4::B().selected.expiration; }
inline string OrderComment() { return string(fake4::B().selected.comment); }
inline string OrderSymbol() { return string(fake4::B().selected.symbol); }

inline int OrderSend(const string &symbol, int cmd, double volume, double price, int slippage, double stoploss, double takeprofit,
                     const string &comment = "", int magic = 0, datetime expiration = 0, color arrow = clrNONE) {
    (void)arrow;
    auto &b = fake4::B();
    if (!b.trade_allowed()) { _LastError = 4109; return -1; }
    if (b.account_refuses()) return -1;
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4106; return -1; }
    if (cmd < OP_BUY || cmd > OP_SELLSTOP) { _LastError = 3; return -1; }
    if (!b.volume_ok(volume)) { _LastError = 131; return -1; }
    double bid = fake4::Book::bid(*s), ask = fake4::Book::ask(*s), pt = fake::Market::point(*s), dist = 10 * pt;
    bool buy = cmd == OP_BUY || cmd == OP_BUYLIMIT || cmd == OP_BUYSTOP;
    double fill = price;
    if (cmd <= OP_SELL) {
        fill = buy ? ask : bid;
        if (fabs(price - fill) > slippage * pt + 1e-9) { _LastError = 138; return -1; }
        if (!b.stops_ok(*s, buy, buy ? bid : ask, stoploss, takeprofit)) { _LastError = 130; return -1; }
    } else {
        bool ok = (cmd == OP_BUYLIMIT && price > 0 && price <= ask - dist) || (cmd == OP_SELLLIMIT && price >= bid + dist) ||
                  (cmd == OP_BUYSTOP && price >= ask + dist) || (cmd == OP_SELLSTOP && price > 0 && price <= bid - dist);
        if (!ok) { _LastError = 130; return -1; }
        if (!b.stops_ok(*s, buy, price, stoploss, takeprofit)) { _LastError = 130; return -1; }
    }
    double need = fake::M().margin_of(*s, volume, fill);
    if (need > b.equity() - b.margin()) { _LastError = 134; return -1; }
    fake4::O o{b.next_ticket++, symbol.utf8(), cmd, volume, fill, fake4::Book::now(), 0, 0, stoploss, takeprofit, magic, comment.utf8().substr(0, 31), 0, 0, 0, expiration};
    b.open.push_back(o);
    return (int)o.ticket;
}
inline bool OrderClose(int ticket, double lots, double price, int slippage, color arrow = clrNONE) {
    (void)arrow;
    auto &b = fake4::B();
    if (!b.trade_allowed()) return b.fail(4109);
    if (b.account_refuses()) return false;
    fake4::O *o = b.find_open(ticket);
    if (!o || o->type > OP_SELL) return b.fail(4108);
    if (!b.volume_ok(lots) || lots > o->lots + 1e-9) return b.fail(131);
    const fake::Sym *s = fake::M().sym(o->symbol);
    if (fabs(price - b.close_of(*o)) > slippage * fake::Market::point(*s) + 1e-9) return b.fail(138);
    b.close_part(ticket, lots, nullptr);
    return true;
}
inline bool OrderModify(int ticket, double price, double stoploss, double takeprofit, datetime expiration, color arrow = clrNONE) {
    (void)arrow;
    auto &b = fake4::B();
    if (!b.trade_allowed()) return b.fail(4109);
    if (b.account_refuses()) return false;
    fake4::O *o = b.find_open(ticket);
    if (!o) return b.fail(4108);
    // Unchanged values: error 1, ERR_NO_RESULT (price and expiration count for pending orders only).
    bool pending = o->type > OP_SELL;
    if (o->sl == stoploss && o->tp == takeprofit && (!pending || (o->open_price == price && o->expiration == expiration))) return b.fail(1);
    const fake::Sym *s = fake::M().sym(o->symbol);
    bool buy = o->type == OP_BUY || o->type == OP_BUYLIMIT || o->type == OP_BUYSTOP;
    double ref = o->type <= OP_SELL ? b.close_of(*o) : price;
    if (pending) {
        // The new pending price obeys the stop level as at placement (error 130).
        double bid = fake4::Book::bid(*s), ask = fake4::Book::ask(*s), dist = 10 * fake::Market::point(*s);
        bool ok = (o->type == OP_BUYLIMIT && price > 0 && price <= ask - dist) || (o->type == OP_SELLLIMIT && price >= bid + dist) ||
                  (o->type == OP_BUYSTOP && price >= ask + dist) || (o->type == OP_SELLSTOP && price > 0 && price <= bid - dist);
        if (!ok) return b.fail(130);
        if (expiration != 0 && expiration <= fake4::Book::now()) return b.fail(147);  // an expiry already past
    }
    if (!b.stops_ok(*s, buy, ref, stoploss, takeprofit)) return b.fail(130);
    if (o->type > OP_SELL) { o->open_price = price; o->expiration = expiration; }
    o->sl = stoploss;
    o->tp = takeprofit;
    return true;
}
// Closes open trade `ticket` by the opposite open trade `opposite` of the
// same symbol: the smaller volume on both, `ticket` at the opening price of
// `opposite` (which closes at its own), so the pair pays no spread; the
// rest of the larger one stays open under a new ticket ("from #N").
inline bool OrderCloseBy(int ticket, int opposite, color arrow = clrNONE) {
    (void)arrow;
    auto &b = fake4::B();
    if (!b.trade_allowed()) return b.fail(4109);
    if (b.account_refuses()) return false;
    fake4::O *o = b.find_open(ticket), *by = b.find_open(opposite);
    if (!o || !by || o->type > OP_SELL || by->type > OP_SELL) return b.fail(4108);
    if (ticket == opposite || o->symbol != by->symbol || o->type == by->type) return b.fail(3);  // ERR_INVALID_TRADE_PARAMETERS
    double lots = std::min(o->lots, by->lots), at = by->open_price, own = by->open_price;
    b.close_part(ticket, lots, nullptr, at);
    b.close_part(opposite, lots, nullptr, own);
    return true;
}
inline bool OrderDelete(int ticket, color arrow = clrNONE) {
    (void)arrow;
    auto &b = fake4::B();
    if (!b.trade_allowed()) return b.fail(4109);
    if (b.account_refuses()) return false;
    for (size_t i = 0; i < b.open.size(); i++) {
        if (b.open[i].ticket != ticket) continue;
        if (b.open[i].type <= OP_SELL) return b.fail(4108);
        fake4::O o = b.live(b.open[i]);
        o.close_time = fake4::Book::now();
        b.open.erase(b.open.begin() + (long)i);
        b.history.push_back(o);
        return true;
    }
    return b.fail(4108);
}
inline double MarketInfo(const string &symbol, int mode) {
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4106; return 0; }
    switch (mode) {
    case MODE_TIME: return (double)TimeCurrent();
    case MODE_BID: return fake4::Book::bid(*s);
    case MODE_ASK: return fake4::Book::ask(*s);
    case MODE_POINT: case MODE_TICKSIZE: return fake::Market::point(*s);
    case MODE_DIGITS: return s->digits;
    case MODE_SPREAD: return s->spread_points;
    case MODE_STOPLEVEL: return 10;
    case MODE_LOTSIZE: return s->contract;
    case MODE_TICKVALUE: return fake::Market::point(*s) * s->contract * fake::M().usd(s->profit);
    case MODE_SWAPLONG: return -6.5;
    case MODE_SWAPSHORT: return 1.2;
    case MODE_TRADEALLOWED: return 1;
    case MODE_MINLOT: return 0.01;
    case MODE_LOTSTEP: return 0.01;
    case MODE_MAXLOT: return 100;
    case MODE_SWAPTYPE: return 0;
    case MODE_PROFITCALCMODE: return s->calc_mode == fake::kCalcForex ? 0 : 1;
    case MODE_MARGINCALCMODE: return s->calc_mode == fake::kCalcForex ? 0 : 1;
    case MODE_MARGINREQUIRED: return fake::M().margin_of(*s, 1.0, fake4::Book::ask(*s));
    }
    return 0;
}
inline double AccountFreeMarginCheck(const string &symbol, int cmd, double volume) {
    (void)cmd;
    auto &b = fake4::B();
    const fake::Sym *s = fake::M().sym(symbol.utf8());
    if (!s) { _LastError = 4106; return 0; }
    double after = round((b.equity() - b.margin() - fake::M().margin_of(*s, volume, fake4::Book::ask(*s))) * 100) / 100;
    if (after < 0) _LastError = 134;
    return after;
}
inline double AccountBalance() { return fake4::B().balance; }
inline double AccountEquity() { return fake4::B().equity(); }
inline double AccountMargin() { return fake4::B().margin(); }
inline double AccountFreeMargin() { return round((fake4::B().equity() - fake4::B().margin()) * 100) / 100; }
inline double AccountProfit() { return round(fake4::B().floating() * 100) / 100; }
inline int AccountNumber() { return (int)fake::M().current_login(); }
inline int AccountLeverage() { return (int)fake::M().leverage; }
inline string AccountName() { return "Harness Demo"; }
inline string AccountServer() { return string(fake::M().server); }
inline string AccountCompany() { return "tradeterm harness"; }
inline string AccountCurrency() { return "USD"; }
inline bool RefreshRates() { return true; }
inline bool IsTradeAllowed() { return fake4::B().trade_allowed(); }
