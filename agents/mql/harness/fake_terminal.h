// fake_terminal.h: the MQL5 side of the harness's fake MetaTrader terminal:
// a demo hedging account, 10 000 USD, leverage 1:100, over the market of
// fake_market.h; market and pending orders, SL/TP hits, partial closes,
// deals and history orders, an economic calendar, OnTradeTransaction.
// Trading is always open (every day 00:00-24:00 server time), so the harness
// works at weekends. It offers the MQL5 API the agent calls (OrderSend with
// MqlTradeRequest, PositionGet*, HistoryDeal*, CopyTicksRange, Calendar*,
// ...); the MQL4 API is in fake_terminal4.h, and a build has one or the other.
#pragma once

#ifdef TT_HARNESS_MT4
#error "fake_terminal.h is the MQL5 API: an MT4 build includes fake_terminal4.h only"
#endif

#include "fake_market.h"

#include <set>

// ---------------------------------------------------------------- MQL5-only constants
enum ENUM_ORDER_TYPE { ORDER_TYPE_BUY, ORDER_TYPE_SELL, ORDER_TYPE_BUY_LIMIT, ORDER_TYPE_SELL_LIMIT, ORDER_TYPE_BUY_STOP, ORDER_TYPE_SELL_STOP, ORDER_TYPE_BUY_STOP_LIMIT, ORDER_TYPE_SELL_STOP_LIMIT, ORDER_TYPE_CLOSE_BY };
enum ENUM_TRADE_REQUEST_ACTIONS { TRADE_ACTION_DEAL = 1, TRADE_ACTION_PENDING = 5, TRADE_ACTION_SLTP = 6, TRADE_ACTION_MODIFY = 7, TRADE_ACTION_REMOVE = 8, TRADE_ACTION_CLOSE_BY = 10 };
enum ENUM_ORDER_TYPE_FILLING { ORDER_FILLING_FOK, ORDER_FILLING_IOC, ORDER_FILLING_RETURN, ORDER_FILLING_BOC };
enum ENUM_ORDER_TYPE_TIME { ORDER_TIME_GTC, ORDER_TIME_DAY, ORDER_TIME_SPECIFIED, ORDER_TIME_SPECIFIED_DAY };
enum ENUM_ORDER_STATE { ORDER_STATE_STARTED, ORDER_STATE_PLACED, ORDER_STATE_CANCELED, ORDER_STATE_PARTIAL, ORDER_STATE_FILLED, ORDER_STATE_REJECTED, ORDER_STATE_EXPIRED };
enum ENUM_POSITION_TYPE { POSITION_TYPE_BUY, POSITION_TYPE_SELL };
enum ENUM_DEAL_TYPE { DEAL_TYPE_BUY, DEAL_TYPE_SELL, DEAL_TYPE_BALANCE };
enum ENUM_DEAL_ENTRY { DEAL_ENTRY_IN, DEAL_ENTRY_OUT, DEAL_ENTRY_INOUT, DEAL_ENTRY_OUT_BY };
enum ENUM_DEAL_REASON { DEAL_REASON_CLIENT, DEAL_REASON_MOBILE, DEAL_REASON_WEB, DEAL_REASON_EXPERT, DEAL_REASON_SL, DEAL_REASON_TP, DEAL_REASON_SO };
enum ENUM_TRADE_TRANSACTION_TYPE { TRADE_TRANSACTION_ORDER_ADD, TRADE_TRANSACTION_ORDER_UPDATE, TRADE_TRANSACTION_ORDER_DELETE, TRADE_TRANSACTION_HISTORY_ADD, TRADE_TRANSACTION_HISTORY_UPDATE, TRADE_TRANSACTION_HISTORY_DELETE, TRADE_TRANSACTION_DEAL_ADD, TRADE_TRANSACTION_DEAL_UPDATE, TRADE_TRANSACTION_DEAL_DELETE, TRADE_TRANSACTION_POSITION, TRADE_TRANSACTION_REQUEST };
enum ENUM_POSITION_PROPERTY_INTEGER { POSITION_TICKET, POSITION_TIME, POSITION_TIME_MSC, POSITION_TYPE, POSITION_MAGIC, POSITION_IDENTIFIER };
enum ENUM_POSITION_PROPERTY_DOUBLE { POSITION_VOLUME, POSITION_PRICE_OPEN, POSITION_SL, POSITION_TP, POSITION_PRICE_CURRENT, POSITION_SWAP, POSITION_PROFIT };
enum ENUM_POSITION_PROPERTY_STRING { POSITION_SYMBOL, POSITION_COMMENT };
enum ENUM_ORDER_PROPERTY_INTEGER { ORDER_TICKET, ORDER_TYPE, ORDER_STATE, ORDER_TIME_SETUP_MSC, ORDER_TIME_DONE_MSC, ORDER_MAGIC, ORDER_POSITION_ID, ORDER_TYPE_TIME, ORDER_TIME_EXPIRATION, ORDER_TYPE_FILLING };
enum ENUM_ORDER_PROPERTY_DOUBLE { ORDER_VOLUME_INITIAL, ORDER_VOLUME_CURRENT, ORDER_PRICE_OPEN, ORDER_PRICE_CURRENT, ORDER_SL, ORDER_TP, ORDER_PRICE_STOPLIMIT };
enum ENUM_ORDER_PROPERTY_STRING { ORDER_SYMBOL, ORDER_COMMENT };
enum ENUM_DEAL_PROPERTY_INTEGER { DEAL_TICKET, DEAL_ORDER, DEAL_TIME_MSC, DEAL_TYPE, DEAL_ENTRY, DEAL_MAGIC, DEAL_REASON, DEAL_POSITION_ID };
enum ENUM_DEAL_PROPERTY_DOUBLE { DEAL_VOLUME, DEAL_PRICE, DEAL_COMMISSION, DEAL_SWAP, DEAL_PROFIT };
enum ENUM_DEAL_PROPERTY_STRING { DEAL_SYMBOL, DEAL_COMMENT };
enum ENUM_SYMBOL_SWAP_MODE { SYMBOL_SWAP_MODE_DISABLED, SYMBOL_SWAP_MODE_POINTS, SYMBOL_SWAP_MODE_CURRENCY_SYMBOL, SYMBOL_SWAP_MODE_CURRENCY_MARGIN, SYMBOL_SWAP_MODE_CURRENCY_DEPOSIT, SYMBOL_SWAP_MODE_INTEREST_CURRENT, SYMBOL_SWAP_MODE_INTEREST_OPEN, SYMBOL_SWAP_MODE_REOPEN_CURRENT, SYMBOL_SWAP_MODE_REOPEN_BID };
enum ENUM_SYMBOL_CALC_MODE { SYMBOL_CALC_MODE_FOREX, SYMBOL_CALC_MODE_FOREX_NO_LEVERAGE, SYMBOL_CALC_MODE_FUTURES, SYMBOL_CALC_MODE_CFD, SYMBOL_CALC_MODE_CFDINDEX, SYMBOL_CALC_MODE_CFDLEVERAGE };
enum ENUM_CALENDAR_EVENT_SECTOR { CALENDAR_SECTOR_NONE, CALENDAR_SECTOR_MARKET, CALENDAR_SECTOR_GDP, CALENDAR_SECTOR_JOBS, CALENDAR_SECTOR_PRICES, CALENDAR_SECTOR_MONEY, CALENDAR_SECTOR_TRADE, CALENDAR_SECTOR_GOVERNMENT, CALENDAR_SECTOR_BUSINESS, CALENDAR_SECTOR_CONSUMER, CALENDAR_SECTOR_HOUSING, CALENDAR_SECTOR_TAXES, CALENDAR_SECTOR_HOLIDAYS };
enum ENUM_CALENDAR_EVENT_IMPORTANCE { CALENDAR_IMPORTANCE_NONE, CALENDAR_IMPORTANCE_LOW, CALENDAR_IMPORTANCE_MODERATE, CALENDAR_IMPORTANCE_HIGH };
enum ENUM_SYMBOL_TRADE_EXECUTION { SYMBOL_TRADE_EXECUTION_REQUEST, SYMBOL_TRADE_EXECUTION_INSTANT, SYMBOL_TRADE_EXECUTION_MARKET, SYMBOL_TRADE_EXECUTION_EXCHANGE };
enum ENUM_ACCOUNT_MARGIN_MODE { ACCOUNT_MARGIN_MODE_RETAIL_NETTING, ACCOUNT_MARGIN_MODE_EXCHANGE, ACCOUNT_MARGIN_MODE_RETAIL_HEDGING };
enum ENUM_BOOK_TYPE { BOOK_TYPE_SELL = 1, BOOK_TYPE_BUY = 2, BOOK_TYPE_SELL_MARKET = 3, BOOK_TYPE_BUY_MARKET = 4 };
#define SYMBOL_FILLING_FOK 1
#define SYMBOL_FILLING_IOC 2
#define SYMBOL_EXPIRATION_GTC 1
#define SYMBOL_EXPIRATION_DAY 2
#define SYMBOL_EXPIRATION_SPECIFIED 4
#define SYMBOL_EXPIRATION_SPECIFIED_DAY 8
#define ERR_BOOKS_CANNOT_ADD 4901
#define ERR_BOOKS_CANNOT_DELETE 4902
#define ERR_BOOKS_CANNOT_GET 4903
#define COPY_TICKS_ALL (-1)
#define COPY_TICKS_INFO 1
#define COPY_TICKS_TRADE 2
#define TRADE_RETCODE_PLACED 10008
#define TRADE_RETCODE_DONE 10009
#define TRADE_RETCODE_DONE_PARTIAL 10010
#define TRADE_RETCODE_INVALID 10013
#define TRADE_RETCODE_INVALID_VOLUME 10014
#define TRADE_RETCODE_INVALID_PRICE 10015
#define TRADE_RETCODE_INVALID_STOPS 10016
#define TRADE_RETCODE_TRADE_DISABLED 10017
#define TRADE_RETCODE_SERVER_DISABLES_AT 10026
#define TRADE_RETCODE_NO_MONEY 10019
#define TRADE_RETCODE_INVALID_EXPIRATION 10022
#define TRADE_RETCODE_NO_CHANGES 10025
#define TRADE_RETCODE_INVALID_FILL 10030
#define TRADE_RETCODE_INVALID_ORDER 10035
#define TRADE_RETCODE_POSITION_CLOSED 10036
#define TRADE_RETCODE_INVALID_CLOSE_VOLUME 10038

struct MqlTradeRequest {
    ENUM_TRADE_REQUEST_ACTIONS action; ulong magic; ulong order; string symbol; double volume; double price; double stoplimit;
    double sl; double tp; ulong deviation; ENUM_ORDER_TYPE type; ENUM_ORDER_TYPE_FILLING type_filling; ENUM_ORDER_TYPE_TIME type_time;
    datetime expiration; string comment; ulong position; ulong position_by;
};
struct MqlTradeResult { uint retcode; ulong deal; ulong order; double volume; double price; double bid; double ask; string comment; uint request_id; int retcode_external; };
struct MqlTradeCheckResult { uint retcode; double balance; double equity; double profit; double margin; double margin_free; double margin_level; string comment; };
struct MqlTradeTransaction {
    ulong deal; ulong order; string symbol; ENUM_TRADE_TRANSACTION_TYPE type; ENUM_ORDER_TYPE order_type; ENUM_ORDER_STATE order_state;
    ENUM_DEAL_TYPE deal_type; ENUM_ORDER_TYPE_TIME time_type; datetime time_expiration; double price; double price_trigger;
    double price_sl; double price_tp; double volume; ulong position; ulong position_by;
};
struct MqlBookInfo { ENUM_BOOK_TYPE type; double price; long volume; double volume_real; };
struct MqlCalendarValue { ulong id; ulong event_id; datetime time; datetime period; int revision; long actual_value; long prev_value; long revised_prev_value; long forecast_value; int impact_type; };
struct MqlCalendarEvent { ulong id; int type; ENUM_CALENDAR_EVENT_SECTOR sector; int frequency; int time_mode; ulong country_id; int unit; ENUM_CALENDAR_EVENT_IMPORTANCE importance; int multiplier; uint digits; string source_url; string event_code; string name; };
struct MqlCalendarCountry { ulong id; string name; string code; string currency; string currency_symbol; string url_name; };



// ---------------------------------------------------------------- the fake

// ---------------------------------------------------------------- the MT5 account
namespace fake {

struct Pos {
    long ticket; std::string symbol; int type; double volume; double open; long open_ms; double sl, tp; long magic; std::string comment; double swap;
};
struct Ord {
    long ticket; std::string symbol; int type; double volume_initial, volume; double price; double sl, tp; long setup_ms, done_ms; long magic;
    std::string comment; int state; long position;
    double stoplimit; int type_time; long expiration; int filling;  // expiration: server seconds (SPECIFIED, SPECIFIED_DAY)
};
// A transaction as OnTradeTransaction gets it: request and result are filled
// for TRADE_TRANSACTION_REQUEST only.
struct Tx { MqlTradeTransaction t; MqlTradeRequest req; MqlTradeResult res; };
struct Deal {
    long ticket, order; long position; std::string symbol; int type, entry, reason; double volume, price, profit, swap, commission; long time_ms; long magic; std::string comment;
};
struct Terminal : Market {
    std::vector<Pos> positions;
    std::vector<Ord> orders;    // pending
    std::vector<Ord> history;   // finished orders
    std::vector<Deal> deals;
    double balance = 10000.0;
    long next_order = 5000001, next_deal = 7000001;
    Pos selected_pos{};
    Ord selected_ord{};
    std::vector<long> hist_deals, hist_orders;  // HistorySelect selection
    std::vector<Tx> transactions;
    std::function<void(const MqlTradeTransaction &, const MqlTradeRequest &, const MqlTradeResult &)> on_transaction;
    std::set<std::string> books;  // symbols with a MarketBookAdd subscription
    long last_step = 0;

    Terminal() {
        login = 5012345;
        server = "Tradeterm-Harness";
        // A balance deal: the initial deposit, a day ago.
        long t = now_server_ms() - 86400000L;
        deals.push_back({next_deal++, 0, 0, "", DEAL_TYPE_BALANCE, DEAL_ENTRY_IN, DEAL_REASON_CLIENT, 0, 0, balance, 0, 0, t, 0, "deposit"});
    }

    double profit_of(const Pos &p, double close) const {
        const Sym *s = sym(p.symbol);
        if (!s) return 0;
        double dir = p.type == POSITION_TYPE_BUY ? 1 : -1;
        return round((close - p.open) * dir * s->contract * p.volume * usd(s->profit) * 100) / 100;
    }
    double close_price(const Pos &p) const {
        const Sym *s = sym(p.symbol);
        long now = now_server_ms();
        return p.type == POSITION_TYPE_BUY ? bid_at(*s, now) : ask_at(*s, now);
    }
    double floating() const { double f = 0; for (auto &p : positions) f += profit_of(p, close_price(p)) + p.swap; return f; }
    double used_margin() const {
        double m = 0;
        for (auto &p : positions) { const Sym *s = sym(p.symbol); if (s) m += margin_of(*s, p.volume, p.open); }
        return round(m * 100) / 100;
    }
    double equity() const { return round((balance + floating()) * 100) / 100; }

    void emit(ENUM_TRADE_TRANSACTION_TYPE type, long deal, long order, int order_type, long position, const std::string &symbol,
              int state = ORDER_STATE_STARTED) {
        Tx x{};
        MqlTradeTransaction &t = x.t;
        t.type = type; t.deal = (ulong)deal; t.order = (ulong)order; t.order_type = (ENUM_ORDER_TYPE)order_type;
        t.position = (ulong)position; t.symbol = string(symbol); t.order_state = (ENUM_ORDER_STATE)state;
        transactions.push_back(x);
    }
    void deliver() {
        std::vector<Tx> q;
        q.swap(transactions);
        for (auto &x : q) if (on_transaction) on_transaction(x.t, x.req, x.res);
    }
    Ord *pending(long ticket) { for (auto &o : orders) if (o.ticket == ticket) return &o; return nullptr; }
    static bool stop_limit(int type) { return type == ORDER_TYPE_BUY_STOP_LIMIT || type == ORDER_TYPE_SELL_STOP_LIMIT; }
    // When an order of `type_time` placed at `setup_ms` with `expiration` (server s) expires, server s; 0 = never.
    static long deadline(int type_time, long setup_ms, long expiration) {
        if (type_time == ORDER_TIME_DAY) return setup_ms / 1000 / 86400 * 86400 + 86400;
        if (type_time == ORDER_TIME_SPECIFIED) return expiration;
        if (type_time == ORDER_TIME_SPECIFIED_DAY) return expiration / 86400 * 86400 + 86400;
        return 0;
    }
    // SYMBOL_FILLING_MODE: FOK and IOC by their flags; RETURN not in market
    // execution (a pending order always may use it).
    uint check_filling(const Sym &s, int filling, bool pending_order) const {
        long f = filling_of(s);
        if (filling == ORDER_FILLING_FOK && (f & SYMBOL_FILLING_FOK)) return 0;
        if (filling == ORDER_FILLING_IOC && (f & SYMBOL_FILLING_IOC)) return 0;
        if (filling == ORDER_FILLING_RETURN && pending_order) return 0;
        return TRADE_RETCODE_INVALID_FILL;
    }
    // SYMBOL_EXPIRATION_MODE flags, and an expiry that is not over.
    uint check_expiration(const Sym &s, int type_time, long expiration) const {
        if (type_time < ORDER_TIME_GTC || type_time > ORDER_TIME_SPECIFIED_DAY) return TRADE_RETCODE_INVALID_EXPIRATION;
        if ((expiration_of(s) & (1L << type_time)) == 0) return TRADE_RETCODE_INVALID_EXPIRATION;
        long now = now_server_ms() / 1000;
        if (type_time == ORDER_TIME_SPECIFIED && expiration <= now) return TRADE_RETCODE_INVALID_EXPIRATION;
        if (type_time == ORDER_TIME_SPECIFIED_DAY && deadline(type_time, 0, expiration) <= now) return TRADE_RETCODE_INVALID_EXPIRATION;
        return 0;
    }

    // ---- validation shared by OrderCheck and OrderSend
    uint check_volume(const Sym &s, double v) const {
        (void)s;
        if (!(v >= 0.01 - 1e-9) || v > 100 + 1e-9) return TRADE_RETCODE_INVALID_VOLUME;
        double steps = v / 0.01;
        if (fabs(steps - round(steps)) > 1e-6) return TRADE_RETCODE_INVALID_VOLUME;
        return 0;
    }
    // SL/TP of a position of `buy` direction entering/held at `ref` (bid for buys' exits, ask for sells').
    uint check_stops(const Sym &s, bool buy, double ref, double sl, double tp) const {
        return stops_ok(s, buy, ref, sl, tp) ? 0 : TRADE_RETCODE_INVALID_STOPS;
    }
    uint check_request(const MqlTradeRequest &r, double &fill, double &need) const {
        fill = 0; need = 0;
        const Sym *s = sym(r.symbol.utf8());
        if (!s) return TRADE_RETCODE_INVALID;
        long now = now_server_ms();
        double bid = bid_at(*s, now), ask = ask_at(*s, now);
        double dist = 10 * point(*s);
        if (r.action == TRADE_ACTION_DEAL && r.position == 0) {
            if (r.type != ORDER_TYPE_BUY && r.type != ORDER_TYPE_SELL) return TRADE_RETCODE_INVALID;
            if (uint rc = check_volume(*s, r.volume)) return rc;
            bool buy = r.type == ORDER_TYPE_BUY;
            fill = buy ? ask : bid;
            if (uint rc = check_filling(*s, r.type_filling, false)) return rc;
            if (uint rc = check_stops(*s, buy, buy ? bid : ask, r.sl, r.tp)) return rc;
            need = margin_of(*s, r.volume, fill);
            if (need > equity() - used_margin()) return TRADE_RETCODE_NO_MONEY;
            return 0;
        }
        if (r.action == TRADE_ACTION_PENDING) {
            if (uint rc = check_volume(*s, r.volume)) return rc;
            double p = r.price;
            fill = p;
            bool ok = false;
            switch (r.type) {
            case ORDER_TYPE_BUY_LIMIT: ok = p > 0 && p <= ask - dist; break;
            case ORDER_TYPE_SELL_LIMIT: ok = p >= bid + dist; break;
            case ORDER_TYPE_BUY_STOP: ok = p >= ask + dist; break;
            case ORDER_TYPE_SELL_STOP: ok = p > 0 && p <= bid - dist; break;
            // The limit order placed at the stop: below it for a buy, above it for a sell.
            case ORDER_TYPE_BUY_STOP_LIMIT: ok = p >= ask + dist && r.stoplimit > 0 && r.stoplimit < p; break;
            case ORDER_TYPE_SELL_STOP_LIMIT: ok = p > 0 && p <= bid - dist && r.stoplimit > p; break;
            default: return TRADE_RETCODE_INVALID;
            }
            if (!ok) return TRADE_RETCODE_INVALID_PRICE;
            bool buy = r.type == ORDER_TYPE_BUY_LIMIT || r.type == ORDER_TYPE_BUY_STOP || r.type == ORDER_TYPE_BUY_STOP_LIMIT;
            if (uint rc = check_filling(*s, r.type_filling, true)) return rc;
            if (uint rc = check_expiration(*s, r.type_time, (long)r.expiration)) return rc;
            // SL and TP of a stop-limit order are measured from the limit price it fills at.
            if (uint rc = check_stops(*s, buy, stop_limit(r.type) ? r.stoplimit : p, r.sl, r.tp)) return rc;
            need = margin_of(*s, r.volume, p);
            if (need > equity() - used_margin()) return TRADE_RETCODE_NO_MONEY;
            return 0;
        }
        return 0;
    }

    Pos *position(long ticket) { for (auto &p : positions) if (p.ticket == ticket) return &p; return nullptr; }

    long open_position(const std::string &symbol, int type, double volume, double price, double sl, double tp, long magic,
                       const std::string &comment, long order, int reason) {
        long now = now_server_ms();
        Pos p{order, symbol, type == ORDER_TYPE_BUY ? POSITION_TYPE_BUY : POSITION_TYPE_SELL, volume, price, now, sl, tp, magic, comment, 0};
        positions.push_back(p);
        long d = next_deal++;
        deals.push_back({d, order, order, symbol, type == ORDER_TYPE_BUY ? DEAL_TYPE_BUY : DEAL_TYPE_SELL, DEAL_ENTRY_IN, reason, volume, price, 0, 0, 0, now, magic, comment});
        emit(TRADE_TRANSACTION_DEAL_ADD, d, order, type, order, symbol);
        return d;
    }

    // Closes `volume` of a position at the market; returns the deal ticket.
    // (`at` > 0: at that price, as a close by; `entry` DEAL_ENTRY_OUT or DEAL_ENTRY_OUT_BY.)
    long close_volume(Pos &p, double volume, long order, int reason, const std::string &comment, double at = 0,
                      int entry = DEAL_ENTRY_OUT) {
        long now = now_server_ms();
        double price = at > 0 ? at : close_price(p);
        Pos part = p;
        part.volume = volume;
        double profit = profit_of(part, price);
        balance = round((balance + profit) * 100) / 100;
        long d = next_deal++;
        int dtype = p.type == POSITION_TYPE_BUY ? DEAL_TYPE_SELL : DEAL_TYPE_BUY;
        deals.push_back({d, order, p.ticket, p.symbol, dtype, entry, reason, volume, price, profit, 0, 0, now, p.magic, comment});
        long pos_ticket = p.ticket;
        std::string symbol = p.symbol;
        p.volume = round((p.volume - volume) * 100) / 100;
        if (p.volume <= 1e-9) {
            for (size_t i = 0; i < positions.size(); i++)
                if (positions[i].ticket == pos_ticket) { positions.erase(positions.begin() + (long)i); break; }
        }
        emit(TRADE_TRANSACTION_DEAL_ADD, d, order, dtype, pos_ticket, symbol);
        return d;
    }

    void finish(Ord o, int state, long position) {
        o.state = state;
        o.done_ms = now_server_ms();
        o.position = position;
        history.push_back(o);
    }

    // OrderSend: the request, then its TRADE_TRANSACTION_REQUEST (request and
    // result) once the server has answered.
    bool send(const MqlTradeRequest &r, MqlTradeResult &res) {
        bool ok = send_request(r, res);
        if (res.retcode != 0) {
            Tx x{};
            x.t.type = TRADE_TRANSACTION_REQUEST;
            x.req = r;
            x.res = res;
            transactions.push_back(x);
        }
        return ok;
    }

    bool send_request(const MqlTradeRequest &r, MqlTradeResult &res) {
        res = MqlTradeResult();
        long now = now_server_ms();
        if (!terminal_trade_allowed || !mql_trade_allowed) { _LastError = 4752; return false; }
        // The broker's permissions: the trade server refuses.
        if (!account_trade_allowed) { res.retcode = TRADE_RETCODE_TRADE_DISABLED; res.comment = string("Trade disabled"); return false; }
        if (!account_trade_expert) { res.retcode = TRADE_RETCODE_SERVER_DISABLES_AT; res.comment = string("AutoTrading disabled by server"); return false; }
        auto reply = [&](uint rc, const char *comment) { res.retcode = rc; res.comment = string(comment); return rc == TRADE_RETCODE_DONE || rc == TRADE_RETCODE_PLACED; };
        if (r.action == TRADE_ACTION_DEAL && r.position != 0) {
            Pos *p = position((long)r.position);
            if (!p) return reply(TRADE_RETCODE_POSITION_CLOSED, "Position doesn't exist");
            if (check_volume(*sym(p->symbol), r.volume) || r.volume > p->volume + 1e-9) return reply(TRADE_RETCODE_INVALID_CLOSE_VOLUME, "Invalid close volume");
            long order = next_order++;
            double price = close_price(*p);
            if (uint rc = check_filling(*sym(p->symbol), r.type_filling, false)) return reply(rc, "Unsupported filling mode");
            Ord o{order, p->symbol, p->type == POSITION_TYPE_BUY ? ORDER_TYPE_SELL : ORDER_TYPE_BUY, r.volume, r.volume, price, 0, 0, now, now, (long)r.magic, r.comment.utf8(), 0, p->ticket, 0, ORDER_TIME_GTC, 0, r.type_filling};
            long pos = p->ticket;
            long d = close_volume(*p, r.volume, order, DEAL_REASON_EXPERT, r.comment.utf8());
            finish(o, ORDER_STATE_FILLED, pos);
            res.order = (ulong)order; res.deal = (ulong)d; res.volume = r.volume; res.price = price;
            return reply(TRADE_RETCODE_DONE, "Request executed");
        }
        if (r.action == TRADE_ACTION_DEAL || r.action == TRADE_ACTION_PENDING) {
            double fill, need;
            uint rc = check_request(r, fill, need);
            if (rc == TRADE_RETCODE_INVALID_VOLUME) return reply(rc, "Invalid volume");
            if (rc == TRADE_RETCODE_INVALID_STOPS) return reply(rc, "Invalid stops");
            if (rc == TRADE_RETCODE_INVALID_PRICE) return reply(rc, "Invalid price");
            if (rc == TRADE_RETCODE_NO_MONEY) return reply(rc, "No money");
            if (rc == TRADE_RETCODE_INVALID_FILL) return reply(rc, "Unsupported filling mode");
            if (rc == TRADE_RETCODE_INVALID_EXPIRATION) return reply(rc, "Invalid expiration");
            if (rc) return reply(rc, "Invalid request");
            long order = next_order++;
            bool timed = r.type_time == ORDER_TIME_SPECIFIED || r.type_time == ORDER_TIME_SPECIFIED_DAY;
            bool pend = r.action == TRADE_ACTION_PENDING;
            Ord o{order, r.symbol.utf8(), r.type, r.volume, r.volume, fill, r.sl, r.tp, now, 0, (long)r.magic, r.comment.utf8().substr(0, 31), ORDER_STATE_PLACED, 0,
                  pend && stop_limit(r.type) ? r.stoplimit : 0, pend ? (int)r.type_time : (int)ORDER_TIME_GTC, pend && timed ? (long)r.expiration : 0, r.type_filling};
            if (r.action == TRADE_ACTION_PENDING) {
                orders.push_back(o);
                emit(TRADE_TRANSACTION_ORDER_ADD, 0, order, r.type, 0, r.symbol.utf8(), ORDER_STATE_PLACED);
                res.order = (ulong)order; res.volume = r.volume; res.price = r.price;
                return reply(TRADE_RETCODE_PLACED, "Request placed");
            }
            long d = open_position(r.symbol.utf8(), r.type, r.volume, fill, r.sl, r.tp, (long)r.magic, o.comment, order, DEAL_REASON_EXPERT);
            finish(o, ORDER_STATE_FILLED, order);
            res.order = (ulong)order; res.deal = (ulong)d; res.volume = r.volume; res.price = fill;
            return reply(TRADE_RETCODE_DONE, "Request executed");
        }
        if (r.action == TRADE_ACTION_SLTP) {
            Pos *p = position((long)r.position);
            if (!p) return reply(TRADE_RETCODE_POSITION_CLOSED, "Position doesn't exist");
            const Sym *s = sym(p->symbol);
            bool buy = p->type == POSITION_TYPE_BUY;
            if (uint rc = check_stops(*s, buy, close_price(*p), r.sl, r.tp)) return reply(rc, "Invalid stops");
            p->sl = r.sl; p->tp = r.tp;
            emit(TRADE_TRANSACTION_POSITION, 0, 0, 0, p->ticket, p->symbol);
            return reply(TRADE_RETCODE_DONE, "Request executed");
        }
        if (r.action == TRADE_ACTION_REMOVE) {
            for (size_t i = 0; i < orders.size(); i++) {
                if (orders[i].ticket != (long)r.order) continue;
                Ord o = orders[i];
                orders.erase(orders.begin() + (long)i);
                finish(o, ORDER_STATE_CANCELED, 0);
                emit(TRADE_TRANSACTION_ORDER_DELETE, 0, o.ticket, o.type, 0, o.symbol, ORDER_STATE_CANCELED);
                res.order = (ulong)o.ticket;
                return reply(TRADE_RETCODE_DONE, "Request executed");
            }
            return reply(TRADE_RETCODE_INVALID_ORDER, "Invalid order");
        }
        if (r.action == TRADE_ACTION_MODIFY) {
            // A pending order's price, stop-limit price, SL, TP and expiry;
            // the request carries them all (a 0 level removes it).
            Ord *o = pending((long)r.order);
            if (!o) return reply(TRADE_RETCODE_INVALID_ORDER, "Invalid order");
            bool timed = r.type_time == ORDER_TIME_SPECIFIED || r.type_time == ORDER_TIME_SPECIFIED_DAY;
            double stoplimit = stop_limit(o->type) ? r.stoplimit : 0;
            long expiration = timed ? (long)r.expiration : 0;
            if (o->price == r.price && o->stoplimit == stoplimit && o->sl == r.sl && o->tp == r.tp && o->type_time == (int)r.type_time &&
                o->expiration == expiration)
                return reply(TRADE_RETCODE_NO_CHANGES, "No changes");
            MqlTradeRequest c = r;
            c.action = TRADE_ACTION_PENDING;
            c.symbol = string(o->symbol);
            c.type = (ENUM_ORDER_TYPE)o->type;
            c.volume = o->volume;
            c.type_filling = ORDER_FILLING_RETURN;
            double fill, need;
            uint rc = check_request(c, fill, need);
            if (rc == TRADE_RETCODE_INVALID_STOPS) return reply(rc, "Invalid stops");
            if (rc == TRADE_RETCODE_INVALID_PRICE) return reply(rc, "Invalid price");
            if (rc == TRADE_RETCODE_INVALID_EXPIRATION) return reply(rc, "Invalid expiration");
            if (rc && rc != TRADE_RETCODE_NO_MONEY) return reply(rc, "Invalid request");
            o->price = r.price; o->stoplimit = stoplimit; o->sl = r.sl; o->tp = r.tp; o->type_time = r.type_time; o->expiration = expiration;
            emit(TRADE_TRANSACTION_ORDER_UPDATE, 0, o->ticket, o->type, 0, o->symbol, ORDER_STATE_PLACED);
            res.order = (ulong)o->ticket; res.volume = o->volume; res.price = o->price;
            return reply(TRADE_RETCODE_DONE, "Request executed");
        }
        if (r.action == TRADE_ACTION_CLOSE_BY) {
            // Hedging accounts only: the smaller volume of two opposite
            // positions of one symbol, both at position_by's opening price.
            if (margin_mode != ACCOUNT_MARGIN_MODE_RETAIL_HEDGING) return reply(TRADE_RETCODE_INVALID, "Invalid request");
            Pos *p = position((long)r.position), *b = position((long)r.position_by);
            if (!p || !b) return reply(TRADE_RETCODE_POSITION_CLOSED, "Position doesn't exist");
            if (p == b || p->symbol != b->symbol || p->type == b->type) return reply(TRADE_RETCODE_INVALID, "Invalid request");
            double volume = std::min(p->volume, b->volume), price = b->open;
            long pt = p->ticket, bt = b->ticket, order = next_order++;
            std::string symbol = p->symbol;
            Ord o{order, symbol, ORDER_TYPE_CLOSE_BY, volume, volume, price, 0, 0, now, now, (long)r.magic, r.comment.utf8(), 0, pt, 0, ORDER_TIME_GTC, 0, ORDER_FILLING_FOK};
            long d = close_volume(*p, volume, order, DEAL_REASON_EXPERT, r.comment.utf8(), price, DEAL_ENTRY_OUT_BY);
            Pos *by = position(bt);
            close_volume(*by, volume, order, DEAL_REASON_EXPERT, r.comment.utf8(), by->open, DEAL_ENTRY_OUT_BY);
            finish(o, ORDER_STATE_FILLED, pt);
            res.order = (ulong)order; res.deal = (ulong)d; res.volume = volume; res.price = price;
            return reply(TRADE_RETCODE_DONE, "Request executed");
        }
        return reply(TRADE_RETCODE_INVALID, "Invalid request");
    }

    // Advances the market: SL/TP hits and pending order triggers.
    void step() {
        long now = now_server_ms();
        if (step_of(now) == last_step) return;
        last_step = step_of(now);
        for (size_t i = 0; i < positions.size();) {
            Pos &p = positions[i];
            double px = close_price(p);
            bool buy = p.type == POSITION_TYPE_BUY;
            bool sl = p.sl > 0 && (buy ? px <= p.sl : px >= p.sl);
            bool tp = p.tp > 0 && (buy ? px >= p.tp : px <= p.tp);
            if (sl || tp) {
                long order = next_order++;
                Ord o{order, p.symbol, buy ? ORDER_TYPE_SELL : ORDER_TYPE_BUY, p.volume, p.volume, px, 0, 0, now, now, p.magic, sl ? "sl" : "tp", 0, p.ticket, 0, ORDER_TIME_GTC, 0, ORDER_FILLING_FOK};
                long pos = p.ticket;
                close_volume(p, p.volume, order, sl ? DEAL_REASON_SL : DEAL_REASON_TP, sl ? "[sl]" : "[tp]");
                finish(o, ORDER_STATE_FILLED, pos);
                continue;
            }
            i++;
        }
        for (size_t i = 0; i < orders.size();) {
            Ord o = orders[i];
            const Sym *s = sym(o.symbol);
            double bid = bid_at(*s, now), ask = ask_at(*s, now);
            long until = deadline(o.type_time, o.setup_ms, o.expiration);
            if (until > 0 && now / 1000 >= until) {
                orders.erase(orders.begin() + (long)i);
                emit(TRADE_TRANSACTION_ORDER_DELETE, 0, o.ticket, o.type, 0, o.symbol, ORDER_STATE_EXPIRED);
                finish(o, ORDER_STATE_EXPIRED, 0);
                continue;
            }
            bool hit = (o.type == ORDER_TYPE_BUY_LIMIT && ask <= o.price) || (o.type == ORDER_TYPE_SELL_LIMIT && bid >= o.price) ||
                       (o.type == ORDER_TYPE_BUY_STOP && ask >= o.price) || (o.type == ORDER_TYPE_SELL_STOP && bid <= o.price) ||
                       (o.type == ORDER_TYPE_BUY_STOP_LIMIT && ask >= o.price) || (o.type == ORDER_TYPE_SELL_STOP_LIMIT && bid <= o.price);
            if (!hit) { i++; continue; }
            orders.erase(orders.begin() + (long)i);
            if (stop_limit(o.type)) {
                // The stop is reached: the order leaves (filled, no position)
                // and a limit order at its stop-limit price takes its place.
                emit(TRADE_TRANSACTION_ORDER_DELETE, 0, o.ticket, o.type, 0, o.symbol, ORDER_STATE_FILLED);
                Ord l = o;
                l.ticket = next_order++;
                l.type = o.type == ORDER_TYPE_BUY_STOP_LIMIT ? ORDER_TYPE_BUY_LIMIT : ORDER_TYPE_SELL_LIMIT;
                l.price = o.stoplimit;
                l.stoplimit = 0;
                l.setup_ms = now;
                orders.push_back(l);
                emit(TRADE_TRANSACTION_ORDER_ADD, 0, l.ticket, l.type, 0, l.symbol, ORDER_STATE_PLACED);
                finish(o, ORDER_STATE_FILLED, 0);
                continue;
            }
            bool buy = o.type == ORDER_TYPE_BUY_LIMIT || o.type == ORDER_TYPE_BUY_STOP;
            emit(TRADE_TRANSACTION_ORDER_DELETE, 0, o.ticket, o.type, 0, o.symbol, ORDER_STATE_FILLED);
            open_position(o.symbol, buy ? ORDER_TYPE_BUY : ORDER_TYPE_SELL, o.volume, buy ? ask : bid, o.sl, o.tp, o.magic, o.comment, o.ticket, DEAL_REASON_EXPERT);
            finish(o, ORDER_STATE_FILLED, o.ticket);
        }
    }
};

inline Terminal &T() {
    static Terminal t;
    return t;
}
inline Market &M() { return T(); }

} // namespace fake

// ---------------------------------------------------------------- MQL5-only API
inline datetime TimeTradeServer() { return TimeGMT() + fake::kServerOffset; }
inline double AccountInfoDouble(ENUM_ACCOUNT_INFO_DOUBLE p) {
    auto &t = fake::T();
    double margin = t.used_margin(), equity = t.equity();
    switch (p) {
    case ACCOUNT_BALANCE: return t.balance;
    case ACCOUNT_EQUITY: return equity;
    case ACCOUNT_MARGIN: return margin;
    case ACCOUNT_MARGIN_FREE: return round((equity - margin) * 100) / 100;
    case ACCOUNT_MARGIN_LEVEL: return margin > 0 ? round(equity / margin * 10000) / 100 : 0;
    case ACCOUNT_PROFIT: return round(t.floating() * 100) / 100;
    }
    return 0;
}
inline bool SymbolExist(const string &name, bool &is_custom) { is_custom = false; return fake::T().sym(name.utf8()) != nullptr; }
inline bool SymbolInfoMarginRate(const string &symbol, ENUM_ORDER_TYPE type, double &initial, double &maintenance) {
    (void)type;
    if (!fake::T().sym(symbol.utf8())) return false;
    initial = 1.0;
    maintenance = 1.0;
    return true;
}
inline int CopyTicksRange(const string &symbol, std::vector<MqlTick> &out, int flags, ulong from_msc, ulong to_msc) {
    (void)flags;
    out.clear();
    const fake::Sym *s = fake::T().sym(symbol.utf8());
    if (!s) { _LastError = 4401; return -1; }
    long now = fake::Market::now_server_ms();
    long to = std::min((long)to_msc, now);
    long from = std::max((long)from_msc, now - 86400000L);
    double pb = 0, pa = 0;
    for (long st = fake::Market::step_of(from); st <= to && out.size() < 500000; st += fake::kStepMs) {
        if (st < from) continue;
        double b = fake::Market::bid_at(*s, st), a = fake::Market::ask_at(*s, st);
        if (b == pb && a == pa) continue;
        pb = b; pa = a;
        MqlTick k{};
        k.bid = b; k.ask = a; k.time_msc = st; k.time = st / 1000;
        out.push_back(k);
    }
    return (int)out.size();
}

// ---- trading
inline bool OrderSend(const MqlTradeRequest &req, MqlTradeResult &res) { return fake::T().send(req, res); }
inline bool OrderCheck(const MqlTradeRequest &req, MqlTradeCheckResult &res) {
    auto &t = fake::T();
    res = MqlTradeCheckResult();
    double fill, need;
    uint rc = t.check_request(req, fill, need);
    double equity = t.equity(), margin = t.used_margin() + need;
    res.balance = t.balance; res.equity = equity; res.profit = t.floating();
    res.margin = margin; res.margin_free = round((equity - margin) * 100) / 100;
    res.margin_level = margin > 0 ? round(equity / margin * 10000) / 100 : 0;
    res.retcode = rc;
    res.comment = rc ? "Invalid request" : "Done";
    if (rc == TRADE_RETCODE_INVALID_VOLUME) res.comment = "Invalid volume";
    if (rc == TRADE_RETCODE_INVALID_STOPS) res.comment = "Invalid stops";
    if (rc == TRADE_RETCODE_INVALID_PRICE) res.comment = "Invalid price";
    if (rc == TRADE_RETCODE_NO_MONEY) res.comment = "No money";
    if (rc == TRADE_RETCODE_INVALID_FILL) res.comment = "Unsupported filling mode";
    if (rc == TRADE_RETCODE_INVALID_EXPIRATION) res.comment = "Invalid expiration";
    return rc == 0;
}

// ---- depth of market: MarketBookGet answers only between MarketBookAdd and
// MarketBookRelease. Five offers above the ask and five bids below the bid,
// five points apart, sells first, highest price first (as MT5 lists them).
inline bool MarketBookAdd(const string &symbol) {
    if (!fake::T().sym(symbol.utf8())) { _LastError = ERR_BOOKS_CANNOT_ADD; return false; }
    fake::T().books.insert(symbol.utf8());
    return true;
}
inline bool MarketBookRelease(const string &symbol) {
    if (fake::T().books.erase(symbol.utf8()) == 0) { _LastError = ERR_BOOKS_CANNOT_DELETE; return false; }
    return true;
}
inline bool MarketBookGet(const string &symbol, std::vector<MqlBookInfo> &book) {
    auto &t = fake::T();
    const fake::Sym *s = t.sym(symbol.utf8());
    if (!s || !t.books.count(symbol.utf8())) { _LastError = ERR_BOOKS_CANNOT_GET; return false; }
    long step = fake::Market::step_of(fake::Market::now_server_ms());
    double bid = fake::Market::bid_at(*s, step), ask = fake::Market::ask_at(*s, step), pt = fake::Market::point(*s);
    book.clear();
    for (int k = 4; k >= 0; k--) {
        double v = (double)(1 + (step / fake::kStepMs + 3 * k) % 9);
        book.push_back({BOOK_TYPE_SELL, NormalizeDouble(ask + 5 * k * pt, s->digits), (long)v, v});
    }
    for (int k = 0; k < 5; k++) {
        double v = (double)(1 + (step / fake::kStepMs + 5 * k) % 7);
        book.push_back({BOOK_TYPE_BUY, NormalizeDouble(bid - 5 * k * pt, s->digits), (long)v, v});
    }
    return true;
}
inline bool OrderCalcMargin(ENUM_ORDER_TYPE type, const string &symbol, double volume, double price, double &margin) {
    (void)type;
    const fake::Sym *s = fake::T().sym(symbol.utf8());
    if (!s) return false;
    margin = round(fake::T().margin_of(*s, volume, price) * 100) / 100;
    return true;
}

inline int PositionsTotal() { return (int)fake::T().positions.size(); }
inline bool PositionSelectByTicket(ulong ticket) {
    auto *p = fake::T().position((long)ticket);
    if (!p) { _LastError = 4753; return false; }
    fake::T().selected_pos = *p;
    return true;
}
inline ulong PositionGetTicket(int index) {
    auto &t = fake::T();
    if (index < 0 || index >= (int)t.positions.size()) return 0;
    t.selected_pos = t.positions[(size_t)index];
    return (ulong)t.selected_pos.ticket;
}
inline long PositionGetInteger(ENUM_POSITION_PROPERTY_INTEGER p) {
    auto &s = fake::T().selected_pos;
    switch (p) {
    case POSITION_TICKET: case POSITION_IDENTIFIER: return s.ticket;
    case POSITION_TIME: return s.open_ms / 1000;
    case POSITION_TIME_MSC: return s.open_ms;
    case POSITION_TYPE: return s.type;
    case POSITION_MAGIC: return s.magic;
    }
    return 0;
}
inline double PositionGetDouble(ENUM_POSITION_PROPERTY_DOUBLE p) {
    auto &t = fake::T();
    auto &s = t.selected_pos;
    switch (p) {
    case POSITION_VOLUME: return s.volume;
    case POSITION_PRICE_OPEN: return s.open;
    case POSITION_SL: return s.sl;
    case POSITION_TP: return s.tp;
    case POSITION_PRICE_CURRENT: return t.close_price(s);
    case POSITION_SWAP: return s.swap;
    case POSITION_PROFIT: return t.profit_of(s, t.close_price(s));
    }
    return 0;
}
inline string PositionGetString(ENUM_POSITION_PROPERTY_STRING p) {
    auto &s = fake::T().selected_pos;
    return string(p == POSITION_SYMBOL ? s.symbol : s.comment);
}

// Pending orders (MQL4's OrdersTotal, trades and pending orders, is in fake_terminal4.h).
inline int OrdersTotal() { return (int)fake::T().orders.size(); }
inline ulong OrderGetTicket(int index) {
    auto &t = fake::T();
    if (index < 0 || index >= (int)t.orders.size()) return 0;
    t.selected_ord = t.orders[(size_t)index];
    return (ulong)t.selected_ord.ticket;
}
inline bool OrderSelect(ulong ticket) {
    for (auto &o : fake::T().orders) if (o.ticket == (long)ticket) { fake::T().selected_ord = o; return true; }
    _LastError = 4754;
    return false;
}
inline long ord_integer(const fake::Ord &o, ENUM_ORDER_PROPERTY_INTEGER p) {
    switch (p) {
    case ORDER_TICKET: return o.ticket;
    case ORDER_TYPE: return o.type;
    case ORDER_STATE: return o.state;
    case ORDER_TIME_SETUP_MSC: return o.setup_ms;
    case ORDER_TIME_DONE_MSC: return o.done_ms;
    case ORDER_MAGIC: return o.magic;
    case ORDER_POSITION_ID: return o.position;
    case ORDER_TYPE_TIME: return o.type_time;
    case ORDER_TIME_EXPIRATION: return o.expiration;
    case ORDER_TYPE_FILLING: return o.filling;
    }
    return 0;
}
inline double ord_double(const fake::Ord &o, ENUM_ORDER_PROPERTY_DOUBLE p) {
    switch (p) {
    case ORDER_VOLUME_INITIAL: return o.volume_initial;
    case ORDER_VOLUME_CURRENT: return o.volume;
    case ORDER_PRICE_OPEN: return o.price;
    case ORDER_PRICE_CURRENT: return o.price;
    case ORDER_SL: return o.sl;
    case ORDER_TP: return o.tp;
    case ORDER_PRICE_STOPLIMIT: return o.stoplimit;
    }
    return 0;
}
inline long OrderGetInteger(ENUM_ORDER_PROPERTY_INTEGER p) { return ord_integer(fake::T().selected_ord, p); }
inline double OrderGetDouble(ENUM_ORDER_PROPERTY_DOUBLE p) { return ord_double(fake::T().selected_ord, p); }
inline string OrderGetString(ENUM_ORDER_PROPERTY_STRING p) {
    auto &o = fake::T().selected_ord;
    return string(p == ORDER_SYMBOL ? o.symbol : o.comment);
}

// ---- history
inline bool HistorySelect(datetime from, datetime to) {
    auto &t = fake::T();
    t.hist_deals.clear();
    t.hist_orders.clear();
    for (auto &d : t.deals) if (d.time_ms / 1000 >= from && d.time_ms / 1000 <= to) t.hist_deals.push_back(d.ticket);
    for (auto &o : t.history) if (o.done_ms / 1000 >= from && o.done_ms / 1000 <= to) t.hist_orders.push_back(o.ticket);
    return true;
}
inline bool HistorySelectByPosition(long id) {
    auto &t = fake::T();
    t.hist_deals.clear();
    t.hist_orders.clear();
    for (auto &d : t.deals) if (d.position == id) t.hist_deals.push_back(d.ticket);
    for (auto &o : t.history) if (o.position == id) t.hist_orders.push_back(o.ticket);
    return true;
}
inline int HistoryDealsTotal() { return (int)fake::T().hist_deals.size(); }
inline int HistoryOrdersTotal() { return (int)fake::T().hist_orders.size(); }
inline ulong HistoryDealGetTicket(int i) {
    auto &h = fake::T().hist_deals;
    return i >= 0 && i < (int)h.size() ? (ulong)h[(size_t)i] : 0;
}
inline ulong HistoryOrderGetTicket(int i) {
    auto &h = fake::T().hist_orders;
    return i >= 0 && i < (int)h.size() ? (ulong)h[(size_t)i] : 0;
}
inline const fake::Deal *fake_deal(ulong ticket) {
    for (auto &d : fake::T().deals) if (d.ticket == (long)ticket) return &d;
    return nullptr;
}
inline const fake::Ord *fake_hist_order(ulong ticket) {
    for (auto &o : fake::T().history) if (o.ticket == (long)ticket) return &o;
    return nullptr;
}
inline bool HistoryDealSelect(ulong ticket) { return fake_deal(ticket) != nullptr; }
inline long HistoryDealGetInteger(ulong ticket, ENUM_DEAL_PROPERTY_INTEGER p) {
    const fake::Deal *d = fake_deal(ticket);
    if (!d) return 0;
    switch (p) {
    case DEAL_TICKET: return d->ticket;
    case DEAL_ORDER: return d->order;
    case DEAL_TIME_MSC: return d->time_ms;
    case DEAL_TYPE: return d->type;
    case DEAL_ENTRY: return d->entry;
    case DEAL_MAGIC: return d->magic;
    case DEAL_REASON: return d->reason;
    case DEAL_POSITION_ID: return d->position;
    }
    return 0;
}
inline double HistoryDealGetDouble(ulong ticket, ENUM_DEAL_PROPERTY_DOUBLE p) {
    const fake::Deal *d = fake_deal(ticket);
    if (!d) return 0;
    switch (p) {
    case DEAL_VOLUME: return d->volume;
    case DEAL_PRICE: return d->price;
    case DEAL_COMMISSION: return d->commission;
    case DEAL_SWAP: return d->swap;
    case DEAL_PROFIT: return d->profit;
    }
    return 0;
}
inline string HistoryDealGetString(ulong ticket, ENUM_DEAL_PROPERTY_STRING p) {
    const fake::Deal *d = fake_deal(ticket);
    if (!d) return "";
    return string(p == DEAL_SYMBOL ? d->symbol : d->comment);
}
inline long HistoryOrderGetInteger(ulong ticket, ENUM_ORDER_PROPERTY_INTEGER p) {
    const fake::Ord *o = fake_hist_order(ticket);
    return o ? ord_integer(*o, p) : 0;
}
inline double HistoryOrderGetDouble(ulong ticket, ENUM_ORDER_PROPERTY_DOUBLE p) {
    const fake::Ord *o = fake_hist_order(ticket);
    return o ? ord_double(*o, p) : 0;
}
inline string HistoryOrderGetString(ulong ticket, ENUM_ORDER_PROPERTY_STRING p) {
    const fake::Ord *o = fake_hist_order(ticket);
    if (!o) return "";
    return string(p == ORDER_SYMBOL ? o->symbol : o->comment);
}

// ---- calendar: three recurring events, one release a day at 12:30 server time
inline bool CalendarEventById(ulong id, MqlCalendarEvent &ev) {
    ev = MqlCalendarEvent();
    ev.id = id;
    if (id == 1) { ev.country_id = 840; ev.sector = CALENDAR_SECTOR_JOBS; ev.importance = CALENDAR_IMPORTANCE_HIGH; ev.name = "Nonfarm Payrolls"; return true; }
    if (id == 2) { ev.country_id = 999; ev.sector = CALENDAR_SECTOR_PRICES; ev.importance = CALENDAR_IMPORTANCE_MODERATE; ev.name = "CPI y/y"; return true; }
    if (id == 3) { ev.country_id = 392; ev.sector = CALENDAR_SECTOR_MONEY; ev.importance = CALENDAR_IMPORTANCE_HIGH; ev.name = "BoJ Interest Rate Decision"; return true; }
    return false;
}
inline bool CalendarCountryById(ulong id, MqlCalendarCountry &c) {
    c = MqlCalendarCountry();
    c.id = id;
    if (id == 840) { c.name = "United States"; c.code = "US"; c.currency = "USD"; return true; }
    if (id == 999) { c.name = "European Union"; c.code = "EU"; c.currency = "EUR"; return true; }
    if (id == 392) { c.name = "Japan"; c.code = "JP"; c.currency = "JPY"; return true; }
    return false;
}
inline int CalendarValueHistory(std::vector<MqlCalendarValue> &values, datetime from, datetime to = 0, const string &country = "",
                                const string &currency = "") {
    (void)country;
    (void)currency;
    values.clear();
    if (to == 0) to = TimeTradeServer() + 86400 * 30;
    datetime now = TimeTradeServer();
    for (long day = from / 86400; day <= to / 86400 && values.size() < 100000; day++) {
        long t = day * 86400 + 12 * 3600 + 1800;
        if (t < from || t > to) continue;
        MqlCalendarValue v{};
        v.event_id = (ulong)(day % 3 + 1);
        v.id = (ulong)(day * 10 + (long)v.event_id);
        v.time = t;
        v.forecast_value = 2100000 + (day % 5) * 100000;
        v.prev_value = 2000000 + (day % 4) * 100000;
        v.actual_value = t <= now ? 2200000 + (day % 3) * 100000 : LONG_MIN;
        v.revised_prev_value = LONG_MIN;
        values.push_back(v);
    }
    return (int)values.size();
}
