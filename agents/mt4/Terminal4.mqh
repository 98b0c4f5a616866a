//+------------------------------------------------------------------+
//| Terminal4.mqh                                                    |
//| The MQL4 side of the tradeterm agent: every protocol command     |
//| with the MQL4 API (OrderSend/OrderSelect/OrderClose/...).        |
//|                                                                  |
//| MT4 has no positions, deals or position ids; the agent maps:     |
//|  - position ticket = the ticket of the order that opened it. A   |
//|    partial close in MT4 gives the remainder a new ticket with    |
//|    the comment "from #N"; the agent follows these links so the   |
//|    position keeps its first ticket (as MT5's POSITION_IDENTIFIER)|
//|  - deals: an entry deal per opened trade (deal ticket = order    |
//|    ticket) and an exit deal per closed part (deal ticket =       |
//|    TT_MT4_EXIT_BASE + ticket of the closed MT4 order);           |
//|  - times: MT4 reports server time in seconds; shifted to UTC.    |
//| `ticks` and `calendar` answer NOT_SUPPORTED (no tick history and |
//| no economic calendar in MQL4); `order_check` is emulated from    |
//| MarketInfo and AccountFreeMarginCheck.                           |
//+------------------------------------------------------------------+
#ifndef TRADETERM_TERMINAL4_MQH
#define TRADETERM_TERMINAL4_MQH

#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>

#define TT_MT4_EXIT_BASE 1000000000000

long   g_ttMagic = 0;
int    g_ttDeviation = 10;
long   g_ttOffset = 0;       // last plausible server offset (seconds)

//--- identity --------------------------------------------------------

string TermPlatform(void) { return "MT4"; }
long   TermBuild(void) { return TerminalInfoInteger(TERMINAL_BUILD); }
long   TermLogin(void) { return AccountNumber(); }
string TermUid(void) { return TtSha256Hex(TerminalInfoString(TERMINAL_DATA_PATH)); }

// Why automated trading is off, "" when it is on: the terminal's AutoTrading
// button, the expert's "Allow live trading" property, and the permissions the broker
// sets on the account (ACCOUNT_TRADE_ALLOWED, ACCOUNT_TRADE_EXPERT): with any
// of them off the trade server would refuse every order.
string TermTradeBlock(void)
  {
   if(TerminalInfoInteger(TERMINAL_TRADE_ALLOWED) == 0)
      return "the terminal's AutoTrading button is off";
   if(MQLInfoInteger(MQL_TRADE_ALLOWED) == 0)
      return "the expert's Allow live trading property is off";
   if(AccountInfoInteger(ACCOUNT_TRADE_ALLOWED) == 0)
      return "the broker disabled trading on this account (ACCOUNT_TRADE_ALLOWED)";
   if(AccountInfoInteger(ACCOUNT_TRADE_EXPERT) == 0)
      return "the broker disabled expert trading on this account (ACCOUNT_TRADE_EXPERT)";
   return "";
  }

bool TermAutomatedTrading(void)
  {
   return TermTradeBlock() == "";
  }

string TtTradeModeName(void)
  {
   long m = AccountInfoInteger(ACCOUNT_TRADE_MODE);
   if(m == ACCOUNT_TRADE_MODE_DEMO)
      return "demo";
   if(m == ACCOUNT_TRADE_MODE_CONTEST)
      return "contest";
   return "real";
  }

string TermAccountIdentity(void)
  {
   return "{" + JKV("login", JInt(AccountNumber())) + "," + JKV("server", JStr(AccountServer())) + "," +
          JKV("company", JStr(AccountCompany())) + "," + JKV("currency", JStr(AccountCurrency())) + "," +
          JKV("leverage", JInt(AccountLeverage())) + "," + JKV("trade_mode", JStr(TtTradeModeName())) + "}";
  }

string TermAccountInfoJson(void)
  {
   double margin = AccountMargin();
   double equity = AccountEquity();
   double level = 0;
   if(margin > 0)
      level = equity / margin * 100.0;
   return "{" + JKV("login", JInt(AccountNumber())) + "," + JKV("name", JStr(AccountName())) + "," +
          JKV("server", JStr(AccountServer())) + "," + JKV("company", JStr(AccountCompany())) + "," +
          JKV("currency", JStr(AccountCurrency())) + "," + JKV("leverage", JInt(AccountLeverage())) + "," +
          JKV("trade_mode", JStr(TtTradeModeName())) + "," + JKV("balance", JNum(AccountBalance())) + "," +
          JKV("equity", JNum(equity)) + "," + JKV("margin", JNum(margin)) + "," +
          JKV("free_margin", JNum(AccountFreeMargin())) + "," +
          JKV("margin_level", JOptNum(NormalizeDouble(level, 2), margin > 0)) + "," +
          JKV("profit", JNum(AccountProfit())) + "}";
  }

void TermAccountNumbers(double &balance, double &equity, double &margin)
  {
   balance = AccountBalance();
   equity = AccountEquity();
   margin = AccountMargin();
  }

//--- time ------------------------------------------------------------

// Server time minus UTC in seconds (whole half hours). TimeCurrent() is the
// time of the last quote, stale when the market is closed: an implausible
// difference (more than 14 h) keeps the last plausible value.
long TtServerOffset(void)
  {
   long d = (long)(TimeCurrent() - TimeGMT());
   long rounded = (long)MathRound(d / 1800.0) * 1800;
   if(rounded >= -14 * 3600 && rounded <= 14 * 3600)
      g_ttOffset = rounded;
   return g_ttOffset;
  }

long TtUtcMsOfServerTime(const datetime t) { return ((long)t - TtServerOffset()) * 1000; }
datetime TtServerTime(const long utcMs) { return (datetime)(utcMs / 1000 + TtServerOffset()); }

bool TermQuote(const string symbol, double &bid, double &ask, long &timeMs)
  {
   MqlTick t;
   if(!SymbolInfoTick(symbol, t))
      return false;
   bid = t.bid;
   ask = t.ask;
   timeMs = TtUtcMsOfServerTime(t.time);
   return t.time != 0;
  }

//--- names -------------------------------------------------------------

string TtOpName(const int op)
  {
   if(op == OP_BUY) return "BUY";
   if(op == OP_SELL) return "SELL";
   if(op == OP_BUYLIMIT) return "BUY_LIMIT";
   if(op == OP_SELLLIMIT) return "SELL_LIMIT";
   if(op == OP_BUYSTOP) return "BUY_STOP";
   if(op == OP_SELLSTOP) return "SELL_STOP";
   return "";
  }

int TtOp(const string t)
  {
   if(t == "SELL") return OP_SELL;
   if(t == "BUY_LIMIT") return OP_BUYLIMIT;
   if(t == "SELL_LIMIT") return OP_SELLLIMIT;
   if(t == "BUY_STOP") return OP_BUYSTOP;
   if(t == "SELL_STOP") return OP_SELLSTOP;
   return OP_BUY;
  }

// Protocol retcode name of an MQL4 trade error (GetLastError after a failed
// OrderSend/OrderClose/OrderModify/OrderDelete).
string TtMt4ErrorName(const int e)
  {
   if(e == 3) return "invalid_request";
   if(e == 4 || e == 137) return "server_busy";
   if(e == 6) return "connection";
   if(e == 8 || e == 141) return "too_many_requests";
   if(e == 64 || e == 65) return "invalid_account";
   if(e == 128) return "timeout";
   if(e == 129) return "invalid_price";
   if(e == 130) return "invalid_stops";
   if(e == 131) return "invalid_volume";
   if(e == 132) return "market_closed";
   if(e == 133) return "trade_disabled";
   if(e == 134) return "no_money";
   if(e == 135) return "price_changed";
   if(e == 136) return "price_off";
   if(e == 138) return "requote";
   if(e == 139) return "locked";
   if(e == 140) return "long_only";
   if(e == 145) return "frozen";
   if(e == 146) return "trade_context_busy";
   if(e == 147) return "invalid_expiration";
   if(e == 148) return "limit_orders";
   if(e == 149) return "hedge_prohibited";
   if(e == 150) return "fifo_close";
   return "error_" + IntegerToString(e);
  }

// The error body of a failed MQL4 trade call.
bool TtMt4Fail(TtErr &err, const string what)
  {
   int e = GetLastError();
   if(e == 4109 || e == 4110 || e == 4111)
      return TtFail(err, TT_TRADING_DISABLED, what + ": trading is not allowed (error " + IntegerToString(e) + ")");
   if(e == 4108)
      return TtFail(err, TT_NOT_FOUND, what + ": invalid ticket (error 4108)");
   return TtReject(err, TtMt4ErrorName(e), what + " failed, error " + IntegerToString(e));
  }

//--- a snapshot of all MT4 orders (open and history) ------------------------

class TtBook
  {
public:
   int               n;
   TtLongs           ticket;
   TtLongs           root;
   TtLongs           type;
   TtDoubles         lots;
   TtDoubles         openPrice;
   TtLongs           openTime;
   TtDoubles         closePrice;
   TtLongs           closeTime;
   TtDoubles         sl;
   TtDoubles         tp;
   TtDoubles         profit;
   TtDoubles         swap;
   TtDoubles         commission;
   TtLongs           magic;
   TtLongs           expiration;
   TtStrings         comment;
   TtStrings         symbol;
   TtLongs           isOpen;

   void              Add(const bool open)
     {
      int i = n;
      n++;
      ArrayResize(ticket.v, n, 64);
      ArrayResize(root.v, n, 64);
      ArrayResize(type.v, n, 64);
      ArrayResize(lots.v, n, 64);
      ArrayResize(openPrice.v, n, 64);
      ArrayResize(openTime.v, n, 64);
      ArrayResize(closePrice.v, n, 64);
      ArrayResize(closeTime.v, n, 64);
      ArrayResize(sl.v, n, 64);
      ArrayResize(tp.v, n, 64);
      ArrayResize(profit.v, n, 64);
      ArrayResize(swap.v, n, 64);
      ArrayResize(commission.v, n, 64);
      ArrayResize(magic.v, n, 64);
      ArrayResize(expiration.v, n, 64);
      ArrayResize(comment.v, n, 64);
      ArrayResize(symbol.v, n, 64);
      ArrayResize(isOpen.v, n, 64);
      ticket.v[i] = OrderTicket();
      type.v[i] = OrderType();
      lots.v[i] = OrderLots();
      openPrice.v[i] = OrderOpenPrice();
      openTime.v[i] = (long)OrderOpenTime();
      closePrice.v[i] = OrderClosePrice();
      closeTime.v[i] = (long)OrderCloseTime();
      sl.v[i] = OrderStopLoss();
      tp.v[i] = OrderTakeProfit();
      profit.v[i] = OrderProfit();
      swap.v[i] = OrderSwap();
      commission.v[i] = OrderCommission();
      magic.v[i] = OrderMagicNumber();
      expiration.v[i] = (long)OrderExpiration();
      comment.v[i] = OrderComment();
      symbol.v[i] = OrderSymbol();
      isOpen.v[i] = 0;
      if(open)
         isOpen.v[i] = 1;
      root.v[i] = ticket.v[i];
     }

   int               Find(const long t)
     {
      for(int i = 0; i < n; i++)
         if(ticket.v[i] == t)
            return i;
      return -1;
     }

   // Parent ticket of a partial-close remainder ("from #N"), or 0.
   long              Parent(const int i)
     {
      string c = comment.v[i];
      if(StringFind(c, "from #") != 0)
         return 0;
      return StringToInteger(StringSubstr(c, 6));
     }

   void              Load(const bool withHistory)
     {
      n = 0;
      int total = OrdersTotal();
      for(int i = 0; i < total; i++)
         if(OrderSelect(i, SELECT_BY_POS, MODE_TRADES))
            Add(true);
      if(withHistory)
        {
         int h = OrdersHistoryTotal();
         for(int i = 0; i < h; i++)
            if(OrderSelect(i, SELECT_BY_POS, MODE_HISTORY))
               Add(false);
        }
      for(int i = 0; i < n; i++)
        {
         long r = ticket.v[i];
         int k = i;
         for(int guard = 0; guard < 100; guard++)
           {
            long p = Parent(k);
            if(p <= 0)
               break;
            r = p;
            k = Find(p);
            if(k < 0)
               break;
           }
         root.v[i] = r;
        }
     }

   // The open market order carrying position `r`, or -1.
   int               Live(const long r)
     {
      for(int i = 0; i < n; i++)
         if(isOpen.v[i] == 1 && type.v[i] <= OP_SELL && root.v[i] == r)
            return i;
      return -1;
     }

   // Volume the position `r` was opened with (all its parts).
   double            RootVolume(const long r)
     {
      double v = 0;
      for(int i = 0; i < n; i++)
         if(type.v[i] <= OP_SELL && root.v[i] == r)
            v += lots.v[i];
      return NormalizeDouble(v, 8);
     }

   string            UserComment(const int i)
     {
      string c = comment.v[i];
      if(StringFind(c, "from #") == 0 || StringFind(c, "to #") == 0)
         return "";
      return c;
     }
  };

//--- account, positions, orders ----------------------------------------------

bool TtCmdAccountInfo(string &result)
  {
   result = "{\"kind\":\"account_info\"," + StringSubstr(TermAccountInfoJson(), 1);
   return true;
  }

string TtPositionJson4(TtBook &b, const int i)
  {
   string side = "buy";
   if(b.type.v[i] == OP_SELL)
      side = "sell";
   double sl = b.sl.v[i];
   double tp = b.tp.v[i];
   return "{" + JKV("ticket", JInt(b.root.v[i])) + "," + JKV("symbol", JStr(b.symbol.v[i])) + "," +
          JKV("side", JStr(side)) + "," + JKV("volume", JNum(b.lots.v[i])) + "," +
          JKV("open_price", JNum(b.openPrice.v[i])) + "," + JKV("open_time", JInt(TtUtcMsOfServerTime((datetime)b.openTime.v[i]))) + "," +
          JKV("stop_loss", JOptNum(sl, sl != 0)) + "," + JKV("take_profit", JOptNum(tp, tp != 0)) + "," +
          JKV("current_price", JNum(b.closePrice.v[i])) + "," + JKV("swap", JNum(b.swap.v[i])) + "," +
          JKV("commission", JNum(b.commission.v[i])) + "," + JKV("profit", JNum(b.profit.v[i])) + "," +
          JKV("magic", JInt(b.magic.v[i])) + "," + JKV("comment", JStr(b.UserComment(i))) + "}";
  }

bool TtCmdPositions(TtJson &j, const int c, string &result)
  {
   string filter = j.GetStr(c, "symbol", "");
   TtBook b;
   b.Load(true);
   string items = "";
   bool firstItem = true;
   for(int i = 0; i < b.n; i++)
     {
      if(b.isOpen.v[i] != 1 || b.type.v[i] > OP_SELL)
         continue;
      if(filter != "" && b.symbol.v[i] != filter)
         continue;
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, TtPositionJson4(b, i));
     }
   result = "{\"kind\":\"positions\",\"positions\":[" + items + "]}";
   return true;
  }

bool TtCmdOrders(TtJson &j, const int c, string &result)
  {
   string filter = j.GetStr(c, "symbol", "");
   TtBook b;
   b.Load(false);
   string items = "";
   bool firstItem = true;
   for(int i = 0; i < b.n; i++)
     {
      if(b.type.v[i] < OP_BUYLIMIT || b.type.v[i] > OP_SELLSTOP)
         continue;
      if(filter != "" && b.symbol.v[i] != filter)
         continue;
      double sl = b.sl.v[i];
      double tp = b.tp.v[i];
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, "{" + JKV("ticket", JInt(b.ticket.v[i])) + "," + JKV("symbol", JStr(b.symbol.v[i])) + "," +
                JKV("order_type", JStr(TtOpName((int)b.type.v[i]))) + "," + JKV("volume", JNum(b.lots.v[i])) + "," +
                JKV("price", JNum(b.openPrice.v[i])) + "," + JKV("stop_loss", JOptNum(sl, sl != 0)) + "," +
                JKV("take_profit", JOptNum(tp, tp != 0)) + "," +
                JKV("time_setup", JInt(TtUtcMsOfServerTime((datetime)b.openTime.v[i]))) + "," +
                JKV("magic", JInt(b.magic.v[i])) + "," + JKV("comment", JStr(b.comment.v[i])) + "}");
     }
   result = "{\"kind\":\"orders\",\"orders\":[" + items + "]}";
   return true;
  }

//--- history -------------------------------------------------------------

bool TtRangeArg(TtJson &j, const int c, long &from, long &to, TtErr &err)
  {
   if(!j.Has(c, "from") || !j.Has(c, "to"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`from` and `to` (unix ms) are required");
   from = j.GetLong(c, "from", 0);
   to = j.GetLong(c, "to", 0);
   if(from > to)
      return TtFail(err, TT_INVALID_ARGUMENT, "`from` (" + IntegerToString(from) + ") is after `to` (" + IntegerToString(to) + ")");
   return true;
  }

// Appends (time, json) and keeps `times` ascending (insertion).
void TtInsertByTime(TtLongs &times, TtStrings &items, const long t, const string json)
  {
   int k = ArraySize(times.v);
   ArrayResize(times.v, k + 1, 64);
   ArrayResize(items.v, k + 1, 64);
   int i = k;
   while(i > 0 && times.v[i - 1] > t)
     {
      times.v[i] = times.v[i - 1];
      items.v[i] = items.v[i - 1];
      i--;
     }
   times.v[i] = t;
   items.v[i] = json;
  }

string TtJoin(TtStrings &items)
  {
   string out = "";
   for(int i = 0; i < ArraySize(items.v); i++)
     {
      if(i > 0)
         StringAdd(out, ",");
      StringAdd(out, items.v[i]);
     }
   return out;
  }

string TtDeal4(const long ticket, const long order, const long position, const string symbol, const string side, const string entry,
               const double volume, const double price, const long time, const double profit, const double swap,
               const double commission, const long magic, const string comment)
  {
   return "{" + JKV("ticket", JInt(ticket)) + "," + JKV("order", JInt(order)) + "," + JKV("position", JInt(position)) + "," +
          JKV("symbol", JStr(symbol)) + "," + JKV("side", JStr(side)) + "," + JKV("entry", JStr(entry)) + "," +
          JKV("volume", JNum(volume)) + "," + JKV("price", JNum(price)) + "," + JKV("time", JInt(time)) + "," +
          JKV("profit", JNum(profit)) + "," + JKV("swap", JNum(swap)) + "," + JKV("commission", JNum(commission)) + "," +
          JKV("magic", JInt(magic)) + "," + JKV("comment", JStr(comment)) + "}";
  }

bool TtCmdHistoryDeals(TtJson &j, const int c, string &result, TtErr &err)
  {
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   TtBook b;
   b.Load(true);
   TtLongs times;
   TtStrings items;
   for(int i = 0; i < b.n; i++)
     {
      long type = b.type.v[i];
      if(type == 6 || type == 7)
        {
         // balance / credit operation
         long t = TtUtcMsOfServerTime((datetime)b.openTime.v[i]);
         string side = "buy";
         if(b.profit.v[i] < 0)
            side = "sell";
         if(t >= from && t < to)
            TtInsertByTime(times, items, t, TtDeal4(b.ticket.v[i], 0, 0, "", side, "balance", 0, 0, t, b.profit.v[i], 0, 0, 0, b.comment.v[i]));
         continue;
        }
      if(type > OP_SELL)
         continue;
      string side = "buy";
      string exitSide = "sell";
      if(type == OP_SELL)
        {
         side = "sell";
         exitSide = "buy";
        }
      if(b.root.v[i] == b.ticket.v[i])
        {
         long t = TtUtcMsOfServerTime((datetime)b.openTime.v[i]);
         if(t >= from && t < to)
            TtInsertByTime(times, items, t, TtDeal4(b.ticket.v[i], b.ticket.v[i], b.root.v[i], b.symbol.v[i], side, "in",
                                                     b.RootVolume(b.root.v[i]), b.openPrice.v[i], t, 0, 0, 0, b.magic.v[i], b.UserComment(i)));
        }
      if(b.isOpen.v[i] == 0 && b.closeTime.v[i] > 0)
        {
         long t = TtUtcMsOfServerTime((datetime)b.closeTime.v[i]);
         string comment = b.UserComment(i);
         if(StringFind(b.comment.v[i], "[sl]") >= 0)
            comment = "sl";
         else if(StringFind(b.comment.v[i], "[tp]") >= 0)
            comment = "tp";
         if(t >= from && t < to)
            TtInsertByTime(times, items, t, TtDeal4(TT_MT4_EXIT_BASE + b.ticket.v[i], b.ticket.v[i], b.root.v[i], b.symbol.v[i], exitSide, "out",
                                                     b.lots.v[i], b.closePrice.v[i], t, b.profit.v[i], b.swap.v[i], b.commission.v[i], b.magic.v[i], comment));
        }
     }
   result = "{\"kind\":\"deals\",\"deals\":[" + TtJoin(items) + "]}";
   return true;
  }

bool TtCmdHistoryOrders(TtJson &j, const int c, string &result, TtErr &err)
  {
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   TtBook b;
   b.Load(true);
   TtLongs times;
   TtStrings items;
   for(int i = 0; i < b.n; i++)
     {
      long type = b.type.v[i];
      if(type > OP_SELLSTOP)
         continue;
      string state = "filled";
      long done = 0;
      double volume = b.lots.v[i];
      long position = 0;
      if(type <= OP_SELL)
        {
         if(b.root.v[i] != b.ticket.v[i])
            continue;
         done = b.openTime.v[i];
         volume = b.RootVolume(b.root.v[i]);
         position = b.ticket.v[i];
        }
      else
        {
         if(b.isOpen.v[i] == 1)
            continue;
         state = "canceled";
         if(b.expiration.v[i] > 0 && b.closeTime.v[i] >= b.expiration.v[i])
            state = "expired";
         done = b.closeTime.v[i];
        }
      long t = TtUtcMsOfServerTime((datetime)done);
      if(t < from || t >= to)
         continue;
      TtInsertByTime(times, items, t, "{" + JKV("ticket", JInt(b.ticket.v[i])) + "," + JKV("symbol", JStr(b.symbol.v[i])) + "," +
                     JKV("order_type", JStr(TtOpName((int)type))) + "," + JKV("volume", JNum(volume)) + "," +
                     JKV("price", JNum(b.openPrice.v[i])) + "," + JKV("state", JStr(state)) + "," +
                     JKV("time_setup", JInt(TtUtcMsOfServerTime((datetime)b.openTime.v[i]))) + "," + JKV("time_done", JInt(t)) + "," +
                     JKV("position", JInt(position)) + "," + JKV("comment", JStr(b.UserComment(i))) + "," +
                     JKV("magic", JInt(b.magic.v[i])) + "}");
     }
   result = "{\"kind\":\"history_orders\",\"orders\":[" + TtJoin(items) + "]}";
   return true;
  }

//--- market data ---------------------------------------------------------

bool TtSymbolArg(TtJson &j, const int c, string &symbol, TtErr &err)
  {
   symbol = j.GetStr(c, "symbol", "");
   if(symbol == "")
      return TtFail(err, TT_INVALID_ARGUMENT, "`symbol` is required");
   ResetLastError();
   if(!SymbolSelect(symbol, true))
      return TtFail(err, TT_NOT_FOUND, "unknown symbol `" + symbol + "`; the `symbols` command lists them");
   return true;
  }

bool TtCmdSymbols(string &result)
  {
   string items = "";
   int n = SymbolsTotal(false);
   for(int i = 0; i < n; i++)
     {
      if(i > 0)
         StringAdd(items, ",");
      StringAdd(items, JStr(SymbolName(i, false)));
     }
   result = "{\"kind\":\"symbols\",\"symbols\":[" + items + "]}";
   return true;
  }

bool TtCmdSymbolSpec(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   double tickSize = MarketInfo(s, MODE_TICKSIZE);
   double contract = MarketInfo(s, MODE_LOTSIZE);
   int swapType = (int)MarketInfo(s, MODE_SWAPTYPE);
   string swapMode = "points";
   if(swapType == 1 || swapType == 3)
      swapMode = "currency";
   else if(swapType == 2)
      swapMode = "interest";
   string marginMode = "cfd";
   if((int)MarketInfo(s, MODE_MARGINCALCMODE) == 0)
      marginMode = "forex";
   result = "{\"kind\":\"symbol_spec\"," + JKV("name", JStr(s)) + "," +
            JKV("description", JStr(SymbolInfoString(s, SYMBOL_DESCRIPTION))) + "," +
            JKV("currency_base", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_BASE))) + "," +
            JKV("currency_profit", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_PROFIT))) + "," +
            JKV("currency_margin", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_MARGIN))) + "," +
            JKV("digits", JInt((long)MarketInfo(s, MODE_DIGITS))) + "," +
            JKV("point", JNum(MarketInfo(s, MODE_POINT))) + "," +
            JKV("contract_size", JNum(contract)) + "," +
            JKV("tick_size", JNum(tickSize)) + "," +
            JKV("tick_value", JNum(tickSize * contract)) + "," +
            JKV("volume_min", JNum(MarketInfo(s, MODE_MINLOT))) + "," +
            JKV("volume_max", JNum(MarketInfo(s, MODE_MAXLOT))) + "," +
            JKV("volume_step", JNum(MarketInfo(s, MODE_LOTSTEP))) + "," +
            JKV("stops_level", JInt((long)MarketInfo(s, MODE_STOPLEVEL))) + "," +
            JKV("swap_long", JNum(MarketInfo(s, MODE_SWAPLONG))) + "," +
            JKV("swap_short", JNum(MarketInfo(s, MODE_SWAPSHORT))) + "," +
            JKV("swap_mode", JStr(swapMode)) + "," +
            JKV("swap_triple_day", JInt(SymbolInfoInteger(s, SYMBOL_SWAP_ROLLOVER3DAYS))) + "," +
            JKV("margin_mode", JStr(marginMode)) + "," +
            JKV("margin_rate", JNum(1)) + "," +
            JKV("sessions", TtSessionsJson(s, TtServerOffset())) + "}";
   return true;
  }

bool TtCmdTick(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   double bid = 0;
   double ask = 0;
   long t = 0;
   if(!TermQuote(s, bid, ask, t))
      return TtFail(err, TT_NOT_FOUND, s + " has no quote yet");
   result = "{\"kind\":\"tick\"," + JKV("symbol", JStr(s)) + "," + JKV("bid", JNum(bid)) + "," + JKV("ask", JNum(ask)) + "," + JKV("time", JInt(t)) + "}";
   return true;
  }

bool TtTimeframe(const string name, ENUM_TIMEFRAMES &tf)
  {
   if(name == "M1") tf = PERIOD_M1;
   else if(name == "M5") tf = PERIOD_M5;
   else if(name == "M15") tf = PERIOD_M15;
   else if(name == "M30") tf = PERIOD_M30;
   else if(name == "H1") tf = PERIOD_H1;
   else if(name == "H4") tf = PERIOD_H4;
   else if(name == "D1") tf = PERIOD_D1;
   else if(name == "W1") tf = PERIOD_W1;
   else if(name == "MN1") tf = PERIOD_MN1;
   else return false;
   return true;
  }

bool TtCmdBars(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   string tfName = j.GetStr(c, "timeframe", "");
   ENUM_TIMEFRAMES tf = PERIOD_H1;
   if(!TtTimeframe(tfName, tf))
      return TtFail(err, TT_INVALID_ARGUMENT, "unknown timeframe `" + tfName + "` (M1 M5 M15 M30 H1 H4 D1 W1 MN1)");
   TtRates rates;
   int n = 0;
   if(j.Has(c, "count"))
     {
      long count = j.GetLong(c, "count", 0);
      if(count < 0 || count > TT_MAX_BARS)
         return TtFail(err, TT_INVALID_ARGUMENT, "count is limited to 100000 bars");
      if(count == 0)
         n = 0;
      else if(j.Has(c, "to"))
         n = CopyRates(s, tf, TtServerTime(j.GetLong(c, "to", 0) - 1), (int)count, rates.v);
      else
         n = CopyRates(s, tf, 0, (int)count, rates.v);
     }
   else if(j.Has(c, "from"))
     {
      long from = j.GetLong(c, "from", 0);
      long to = j.GetLong(c, "to", TtUtcMsOfServerTime(TimeCurrent()) + 86400000);
      if(from > to)
         return TtFail(err, TT_INVALID_ARGUMENT, "`from` is after `to`");
      n = CopyRates(s, tf, TtServerTime(from), TtServerTime(to - 1), rates.v);
     }
   else
      return TtFail(err, TT_INVALID_ARGUMENT, "give `count` or `from`/`to`");
   if(n > TT_MAX_BARS)
      return TtFail(err, TT_INVALID_ARGUMENT, "the range holds more than 100000 bars; narrow it or use `count`");
   string items = "";
   for(int i = 0; i < n; i++)
     {
      if(i > 0)
         StringAdd(items, ",");
      StringAdd(items, "{\"time\":" + JInt(TtUtcMsOfServerTime(rates.v[i].time)) + ",\"open\":" + JNum(rates.v[i].open) +
                ",\"high\":" + JNum(rates.v[i].high) + ",\"low\":" + JNum(rates.v[i].low) + ",\"close\":" + JNum(rates.v[i].close) +
                ",\"volume\":" + JNum((double)rates.v[i].tick_volume) + "}");
     }
   result = "{\"kind\":\"bars\"," + JKV("symbol", JStr(s)) + "," + JKV("timeframe", JStr(tfName)) + ",\"bars\":[" + items + "]}";
   return true;
  }

//--- trading ---------------------------------------------------------------

// The parts of a protocol OrderRequest, validated.
bool TtOrderArgs(TtJson &j, const int o, string &symbol, string &type, double &volume, double &price, double &sl, double &tp, TtErr &err)
  {
   if(!j.IsObject(o))
      return TtFail(err, TT_INVALID_ARGUMENT, "`order` is required");
   if(!TtSymbolArg(j, o, symbol, err))
      return false;
   type = j.GetStr(o, "order_type", "");
   if(TtIsStopLimitType(type))
      return TtFail(err, TT_NOT_SUPPORTED, "MT4 has no stop-limit orders (" + type + "); use BUY_STOP/SELL_STOP or a limit order");
   if(!TtIsOrderType(type))
      return TtFail(err, TT_INVALID_ARGUMENT, "`order_type` must be BUY, SELL, BUY_LIMIT, SELL_LIMIT, BUY_STOP or SELL_STOP");
   if(!j.Has(o, "volume"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`volume` is required");
   volume = j.GetNum(o, "volume", 0);
   int digits = (int)MarketInfo(symbol, MODE_DIGITS);
   RefreshRates();
   if(type == "BUY")
      price = MarketInfo(symbol, MODE_ASK);
   else if(type == "SELL")
      price = MarketInfo(symbol, MODE_BID);
   else
     {
      if(!j.Has(o, "price"))
         return TtFail(err, TT_INVALID_ARGUMENT, "`price` is required for pending orders");
      price = NormalizeDouble(j.GetNum(o, "price", 0), digits);
     }
   sl = NormalizeDouble(j.GetNum(o, "stop_loss", 0), digits);
   tp = NormalizeDouble(j.GetNum(o, "take_profit", 0), digits);
   return true;
  }

// `expiration_mode`/`expiration` as MT4's one expiration time (server
// time, 0 = none): GTC and SPECIFIED only, MT4 has no DAY modes.
bool TtExpiration4(TtJson &j, const int o, datetime &expiration, TtErr &err)
  {
   expiration = 0;
   string mode = j.GetStr(o, "expiration_mode", "");
   if(mode == "" || mode == "GTC")
      return true;
   if(!TtIsExpirationMode(mode))
      return TtFail(err, TT_INVALID_ARGUMENT, "`expiration_mode` must be GTC, DAY, SPECIFIED or SPECIFIED_DAY");
   if(mode != "SPECIFIED")
      return TtReject(err, "invalid_expiration", "MT4 pending orders expire at a given time only (GTC or SPECIFIED), not " + mode);
   if(!j.Has(o, "expiration") || j.GetLong(o, "expiration", 0) <= 0)
      return TtFail(err, TT_INVALID_ARGUMENT, "`expiration` (unix ms) is required for SPECIFIED");
   expiration = TtServerTime(j.GetLong(o, "expiration", 0));
   return true;
  }

// What the trade server would say, from MarketInfo: "" when valid.
string TtCheck4(const string symbol, const string type, const double volume, const double price, const double sl, const double tp)
  {
   double minLot = MarketInfo(symbol, MODE_MINLOT);
   double maxLot = MarketInfo(symbol, MODE_MAXLOT);
   double step = MarketInfo(symbol, MODE_LOTSTEP);
   if(volume < minLot - 1e-9 || volume > maxLot + 1e-9)
      return "invalid_volume";
   if(step > 0 && MathAbs(volume / step - MathRound(volume / step)) > 1e-6)
      return "invalid_volume";
   if(MarketInfo(symbol, MODE_TRADEALLOWED) == 0)
      return "market_closed";
   double point = MarketInfo(symbol, MODE_POINT);
   double dist = MarketInfo(symbol, MODE_STOPLEVEL) * point;
   double bid = MarketInfo(symbol, MODE_BID);
   double ask = MarketInfo(symbol, MODE_ASK);
   if(type == "BUY_LIMIT" && price > ask - dist)
      return "invalid_price";
   if(type == "SELL_LIMIT" && price < bid + dist)
      return "invalid_price";
   if(type == "BUY_STOP" && price < ask + dist)
      return "invalid_price";
   if(type == "SELL_STOP" && price > bid - dist)
      return "invalid_price";
   bool buy = TtIsBuyType(type);
   double ref = price;
   if(type == "BUY")
      ref = bid;
   else if(type == "SELL")
      ref = ask;
   if(buy)
     {
      if((sl > 0 && sl > ref - dist) || (tp > 0 && tp < ref + dist))
         return "invalid_stops";
     }
   else
     {
      if((sl > 0 && sl < ref + dist) || (tp > 0 && tp > ref - dist))
         return "invalid_stops";
     }
   int cmd = OP_BUY;
   if(!buy)
      cmd = OP_SELL;
   ResetLastError();
   double after = AccountFreeMarginCheck(symbol, cmd, volume);
   if(after < 0 || GetLastError() == 134)
      return "no_money";
   return "";
  }

bool TtCmdOrderCheck(TtJson &j, const int c, string &result, TtErr &err)
  {
   string symbol = "";
   string type = "";
   double volume = 0;
   double price = 0;
   double sl = 0;
   double tp = 0;
   if(!TtOrderArgs(j, j.Get(c, "order"), symbol, type, volume, price, sl, tp, err))
      return false;
   string why = TtCheck4(symbol, type, volume, price, sl, tp);
   int cmd = OP_BUY;
   if(!TtIsBuyType(type))
      cmd = OP_SELL;
   double free = AccountFreeMargin();
   double after = free;
   if(volume > 0)
      after = AccountFreeMarginCheck(symbol, cmd, volume);
   double margin = free - after;
   if(margin < 0)
      margin = 0;
   double total = AccountMargin() + margin;
   double level = 0;
   if(total > 0)
      level = AccountEquity() / total * 100.0;
   string retcode = "done";
   string comment = "Done";
   if(why != "")
     {
      retcode = why;
      comment = why;
     }
   result = "{\"kind\":\"order_check\"," + JKV("valid", JBool(why == "")) + "," + JKV("retcode", JStr(retcode)) + "," +
            JKV("comment", JStr(comment)) + "," + JKV("price", JNum(price)) + "," + JKV("margin", JNum(NormalizeDouble(margin, 2))) + "," +
            JKV("free_margin_after", JNum(NormalizeDouble(after, 2))) + "," +
            JKV("margin_level_after", JOptNum(NormalizeDouble(level, 2), total > 0)) + "}";
   return true;
  }

string TtTradeJson(const string retcode, const long order, const long deal, const long position, const double volume, const double price, const string comment)
  {
   return "{" + JKV("retcode", JStr(retcode)) + "," + JKV("order", JInt(order)) + "," + JKV("deal", JInt(deal)) + "," +
          JKV("position", JInt(position)) + "," + JKV("volume", JNum(volume)) + "," + JKV("price", JNum(price)) + "," +
          JKV("comment", JStr(comment)) + "}";
  }

bool TtOpen4(const string symbol, const string type, const double volume, const double price, const double sl, const double tp,
             const int slippage, const long magic, const string comment, const datetime expiration, string &trade, TtErr &err)
  {
   ResetLastError();
   int ticket = OrderSend(symbol, TtOp(type), volume, price, slippage, sl, tp, comment, (int)magic, expiration, clrNONE);
   if(ticket < 0)
      return TtMt4Fail(err, "OrderSend");
   if(!OrderSelect(ticket, SELECT_BY_TICKET))
      return TtFail(err, TT_INTERNAL, "order " + IntegerToString(ticket) + " was sent but cannot be selected");
   if(type == "BUY" || type == "SELL")
      trade = TtTradeJson("done", ticket, ticket, ticket, OrderLots(), OrderOpenPrice(), "");
   else
      trade = TtTradeJson("placed", ticket, 0, 0, OrderLots(), OrderOpenPrice(), "");
   return true;
  }

bool TtPlace(TtJson &j, const int o, string &trade, TtErr &err)
  {
   string symbol = "";
   string type = "";
   double volume = 0;
   double price = 0;
   double sl = 0;
   double tp = 0;
   if(!TtOrderArgs(j, o, symbol, type, volume, price, sl, tp, err))
      return false;
   long magic = j.GetLong(o, "magic", 0);
   if(magic == 0)
      magic = g_ttMagic;
   int slippage = (int)j.GetLong(o, "deviation_points", g_ttDeviation);
   datetime expiration = 0;
   if(type != "BUY" && type != "SELL" && !TtExpiration4(j, o, expiration, err))
      return false;
   return TtOpen4(symbol, type, volume, price, sl, tp, slippage, magic, j.GetStr(o, "comment", ""), expiration, trade, err);
  }

// Closes `volume` lots (all when <= 0) of position `pos`.
bool TtClose4(const long pos, const double volume, const int slippage, string &trade, TtErr &err)
  {
   TtBook b;
   b.Load(true);
   int i = b.Live(pos);
   if(i < 0)
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString(pos));
   long live = b.ticket.v[i];
   double lots = b.lots.v[i];
   double vol = volume;
   if(vol <= 0)
      vol = lots;
   if(vol > lots + 1e-9)
      return TtReject(err, "invalid_volume", "the position has only " + JNum(lots) + " lots");
   RefreshRates();
   double price = MarketInfo(b.symbol.v[i], MODE_BID);
   if(b.type.v[i] == OP_SELL)
      price = MarketInfo(b.symbol.v[i], MODE_ASK);
   ResetLastError();
   if(!OrderClose((int)live, vol, price, slippage, clrNONE))
      return TtMt4Fail(err, "OrderClose");
   double closed = price;
   if(OrderSelect((int)live, SELECT_BY_TICKET))
      closed = OrderClosePrice();
   trade = TtTradeJson("done", live, TT_MT4_EXIT_BASE + live, pos, vol, closed, "");
   return true;
  }

bool TtCmdClose(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` is required");
   string trade;
   if(!TtClose4(j.GetLong(c, "ticket", 0), j.GetNum(c, "volume", 0), (int)j.GetLong(c, "deviation_points", g_ttDeviation), trade, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(trade, 1);
   return true;
  }

bool TtCmdModify(TtJson &j, const int c, string &result, TtErr &err)
  {
   long pos = j.GetLong(c, "ticket", 0);
   TtBook b;
   b.Load(true);
   int i = b.Live(pos);
   if(i < 0)
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString(pos));
   int digits = (int)MarketInfo(b.symbol.v[i], MODE_DIGITS);
   double sl = NormalizeDouble(j.GetNum(c, "stop_loss", 0), digits);
   double tp = NormalizeDouble(j.GetNum(c, "take_profit", 0), digits);
   string comment = "Position modified";
   if(b.sl.v[i] == sl && b.tp.v[i] == tp)
      comment = "no changes";
   else
     {
      ResetLastError();
      if(!OrderModify((int)b.ticket.v[i], b.openPrice.v[i], sl, tp, 0, clrNONE) && GetLastError() != 1)
         return TtMt4Fail(err, "OrderModify");
     }
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", 0, 0, pos, b.lots.v[i], b.openPrice.v[i], comment), 1);
   return true;
  }

bool TtCmdCancel(TtJson &j, const int c, string &result, TtErr &err)
  {
   long ticket = j.GetLong(c, "ticket", 0);
   if(!OrderSelect((int)ticket, SELECT_BY_TICKET) || OrderCloseTime() != 0 || OrderType() < OP_BUYLIMIT || OrderType() > OP_SELLSTOP)
      return TtFail(err, TT_NOT_FOUND, "no pending order with ticket " + IntegerToString(ticket));
   double volume = OrderLots();
   double price = OrderOpenPrice();
   ResetLastError();
   if(!OrderDelete((int)ticket, clrNONE))
      return TtMt4Fail(err, "OrderDelete");
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", ticket, 0, 0, volume, price, ""), 1);
   return true;
  }

bool TtCmdReverse(TtJson &j, const int c, string &result, TtErr &err)
  {
   long pos = j.GetLong(c, "ticket", 0);
   TtBook b;
   b.Load(true);
   int i = b.Live(pos);
   if(i < 0)
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString(pos));
   string symbol = b.symbol.v[i];
   double volume = b.lots.v[i];
   string type = "SELL";
   if(b.type.v[i] == OP_SELL)
      type = "BUY";
   long magic = b.magic.v[i];
   string comment = b.UserComment(i);
   string closeTrade;
   if(!TtClose4(pos, volume, g_ttDeviation, closeTrade, err))
      return false;
   RefreshRates();
   double price = MarketInfo(symbol, MODE_BID);
   if(type == "BUY")
      price = MarketInfo(symbol, MODE_ASK);
   string openTrade;
   if(!TtOpen4(symbol, type, volume, price, 0, 0, g_ttDeviation, magic, comment, 0, openTrade, err))
     {
      err.message = "the position was closed but the opposite order failed: " + err.message;
      return false;
     }
   result = "{\"kind\":\"reverse\",\"close\":" + closeTrade + ",\"open\":" + openTrade + "}";
   return true;
  }

// modify_order: OrderModify of a pending order (its whole new state: absent
// SL/TP removes them). Error 1 (ERR_NO_RESULT: nothing changed) is no_changes.
bool TtCmdModifyOrder(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` is required");
   if(!j.Has(c, "price"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`price` is required (the order's new price)");
   long ticket = j.GetLong(c, "ticket", 0);
   if(!OrderSelect((int)ticket, SELECT_BY_TICKET) || OrderCloseTime() != 0 || OrderType() < OP_BUYLIMIT || OrderType() > OP_SELLSTOP)
      return TtFail(err, TT_NOT_FOUND, "no pending order with ticket " + IntegerToString(ticket));
   double volume = OrderLots();
   int digits = (int)MarketInfo(OrderSymbol(), MODE_DIGITS);
   double price = NormalizeDouble(j.GetNum(c, "price", 0), digits);
   double sl = NormalizeDouble(j.GetNum(c, "stop_loss", 0), digits);
   double tp = NormalizeDouble(j.GetNum(c, "take_profit", 0), digits);
   datetime expiration = 0;
   if(!TtExpiration4(j, c, expiration, err))
      return false;
   ResetLastError();
   if(!OrderModify((int)ticket, price, sl, tp, expiration, clrNONE))
     {
      if(GetLastError() == 1)
         return TtReject(err, "no_changes", "OrderModify changed nothing (error 1, ERR_NO_RESULT)");
      return TtMt4Fail(err, "OrderModify");
     }
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", ticket, 0, 0, volume, price, "Order modified"), 1);
   return true;
  }

// close_by: OrderCloseBy of the open trades carrying positions `ticket` and
// `ticket_by` (MT4 accounts hedge); the result is the close of `ticket`.
bool TtCmdCloseBy(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket") || !j.Has(c, "ticket_by"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` and `ticket_by` are required");
   long pos = j.GetLong(c, "ticket", 0);
   long posBy = j.GetLong(c, "ticket_by", 0);
   TtBook b;
   b.Load(true);
   int i = b.Live(pos);
   if(i < 0)
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString(pos));
   int k = b.Live(posBy);
   if(k < 0)
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString(posBy));
   long live = b.ticket.v[i];
   double volume = MathMin(b.lots.v[i], b.lots.v[k]);
   ResetLastError();
   if(!OrderCloseBy((int)live, (int)b.ticket.v[k], clrNONE))
      return TtMt4Fail(err, "OrderCloseBy");
   double closed = b.openPrice.v[k];
   if(OrderSelect((int)live, SELECT_BY_TICKET))
      closed = OrderClosePrice();
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", live, TT_MT4_EXIT_BASE + live, pos, volume, closed, ""), 1);
   return true;
  }

//--- dispatch ---------------------------------------------------------------

// 1 = result, 0 = err, -1 = unknown command.
int TermExecute(TtJson &j, const int c, const string cmd, string &result, TtErr &err)
  {
   bool ok = false;
   if(cmd == "account_info")
      ok = TtCmdAccountInfo(result);
   else if(cmd == "positions")
      ok = TtCmdPositions(j, c, result);
   else if(cmd == "orders")
      ok = TtCmdOrders(j, c, result);
   else if(cmd == "history_deals")
      ok = TtCmdHistoryDeals(j, c, result, err);
   else if(cmd == "history_orders")
      ok = TtCmdHistoryOrders(j, c, result, err);
   else if(cmd == "symbols")
      ok = TtCmdSymbols(result);
   else if(cmd == "symbol_spec")
      ok = TtCmdSymbolSpec(j, c, result, err);
   else if(cmd == "tick")
      ok = TtCmdTick(j, c, result, err);
   else if(cmd == "bars")
      ok = TtCmdBars(j, c, result, err);
   else if(cmd == "ticks")
      ok = TtFail(err, TT_NOT_SUPPORTED, "MetaTrader 4 has no tick history");
   else if(cmd == "order_check")
      ok = TtCmdOrderCheck(j, c, result, err);
   else if(cmd == "place_order")
     {
      string trade;
      ok = TtPlace(j, j.Get(c, "order"), trade, err);
      if(ok)
         result = "{\"kind\":\"trade\"," + StringSubstr(trade, 1);
     }
   else if(cmd == "close_position")
      ok = TtCmdClose(j, c, result, err);
   else if(cmd == "modify_position")
      ok = TtCmdModify(j, c, result, err);
   else if(cmd == "cancel_order")
      ok = TtCmdCancel(j, c, result, err);
   else if(cmd == "reverse_position")
      ok = TtCmdReverse(j, c, result, err);
   else if(cmd == "modify_order")
      ok = TtCmdModifyOrder(j, c, result, err);
   else if(cmd == "close_by")
      ok = TtCmdCloseBy(j, c, result, err);
   else if(cmd == "market_book_add" || cmd == "market_book_get" || cmd == "market_book_release")
      ok = TtFail(err, TT_NOT_SUPPORTED, "MT4 has no depth of market (MarketBook* is MQL5 only)");
   else if(cmd == "calendar")
      ok = TtFail(err, TT_NOT_SUPPORTED, "MetaTrader 4 has no economic calendar");
   else
      return -1;
   if(ok)
      return 1;
   return 0;
  }

//--- trade events: MQL4 has no OnTradeTransaction, so the expert compares
//--- the open orders with the previous timer tick's.

class TtTradeWatch
  {
public:
   TtLongs           m_tickets;
   TtLongs           m_types;
   TtDoubles         m_sl;
   TtDoubles         m_tp;
   TtDoubles         m_price;
   TtLongs           m_exp;
   bool              m_ready;

                     TtTradeWatch(void) { m_ready = false; }

   // Appends protocol events for what changed since the last call.
   void              Poll(TtStrings &events)
     {
      TtBook now;
      now.Load(false);
      if(m_ready)
        {
         TtBook hist;
         bool histLoaded = false;
         // gone: closed positions, removed or triggered pending orders
         for(int k = 0; k < ArraySize(m_tickets.v); k++)
           {
            if(now.Find(m_tickets.v[k]) >= 0)
               continue;
            if(!histLoaded)
              {
               hist.Load(true);
               histLoaded = true;
              }
            int h = hist.Find(m_tickets.v[k]);
            long root = m_tickets.v[k];
            if(h >= 0)
               root = hist.root.v[h];
            if(m_types.v[k] <= OP_SELL)
               Push(events, "deal_added", TT_MT4_EXIT_BASE + m_tickets.v[k], m_tickets.v[k], root);
            else
               Push(events, "order_removed", 0, m_tickets.v[k], 0);
           }
         // new: opened positions (not partial-close remainders), placed orders
         for(int i = 0; i < now.n; i++)
           {
            int k = Index(now.ticket.v[i]);
            if(k < 0)
              {
               if(now.type.v[i] <= OP_SELL)
                 {
                  if(now.Parent(i) == 0)
                     Push(events, "deal_added", now.ticket.v[i], now.ticket.v[i], now.ticket.v[i]);
                 }
               else
                  Push(events, "order_added", 0, now.ticket.v[i], 0);
              }
            else if(now.type.v[i] <= OP_SELL && (m_sl.v[k] != now.sl.v[i] || m_tp.v[k] != now.tp.v[i]))
               Push(events, "position_modified", 0, 0, now.root.v[i]);
            else if(now.type.v[i] > OP_SELL && m_types.v[k] == now.type.v[i] &&
                    (m_sl.v[k] != now.sl.v[i] || m_tp.v[k] != now.tp.v[i] || m_price.v[k] != now.openPrice.v[i] || m_exp.v[k] != now.expiration.v[i]))
               Push(events, "order_modified", 0, now.ticket.v[i], 0);
           }
        }
      int n = now.n;
      ArrayResize(m_tickets.v, n);
      ArrayResize(m_types.v, n);
      ArrayResize(m_sl.v, n);
      ArrayResize(m_tp.v, n);
      ArrayResize(m_price.v, n);
      ArrayResize(m_exp.v, n);
      for(int i = 0; i < n; i++)
        {
         m_price.v[i] = now.openPrice.v[i];
         m_exp.v[i] = now.expiration.v[i];
         m_tickets.v[i] = now.ticket.v[i];
         m_types.v[i] = now.type.v[i];
         m_sl.v[i] = now.sl.v[i];
         m_tp.v[i] = now.tp.v[i];
        }
      m_ready = true;
     }

private:
   int               Index(const long t)
     {
      for(int k = 0; k < ArraySize(m_tickets.v); k++)
         if(m_tickets.v[k] == t)
            return k;
      return -1;
     }

   void              Push(TtStrings &events, const string kind, const long deal, const long order, const long position)
     {
      string e = "{\"kind\":\"trade_transaction\",\"transaction\":" + JStr(kind);
      if(deal > 0)
        {
         long from = TtUtcMsOfServerTime(TimeCurrent()) - 7 * 86400000;
         TtJson q;
         q.Parse("{\"from\":" + JInt(from) + ",\"to\":" + JInt(from + 14 * 86400000) + "}");
         string deals;
         TtErr err;
         if(TtCmdHistoryDeals(q, 0, deals, err))
           {
            TtJson d;
            if(d.Parse(deals))
              {
               int list = d.Get(0, "deals");
               for(int x = d.FirstChild(list); x >= 0; x = d.NextSibling(x))
                  if(d.GetLong(x, "ticket", 0) == deal)
                     e = e + ",\"deal\":" + d.Serialize(x);
              }
           }
        }
      e = e + ",\"order\":" + JInt(order) + ",\"position\":" + JInt(position) + "}";
      int k = ArraySize(events.v);
      ArrayResize(events.v, k + 1);
      events.v[k] = e;
     }
  };

#endif
