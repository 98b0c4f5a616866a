//+------------------------------------------------------------------+
//| Terminal5.mqh                                                    |
//| The MQL5 side of the tradeterm agent: every protocol command     |
//| with the MQL5 API. Times: MetaTrader reports trade-server time;  |
//| the protocol speaks UTC, so every time is shifted by the server  |
//| offset (TimeTradeServer() - TimeGMT(), rounded to 30 minutes).   |
//+------------------------------------------------------------------+
#ifndef TRADETERM_TERMINAL5_MQH
#define TRADETERM_TERMINAL5_MQH

#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>

class TtCalendarValues { public: TT_ARRAY(MqlCalendarValue); };
class TtBookInfos { public: TT_ARRAY(MqlBookInfo); };

long   g_ttMagic = 0;        // default magic number (inp_Magic)
int    g_ttDeviation = 10;   // default deviation in points (inp_Deviation)

//--- identity --------------------------------------------------------

string TermPlatform(void) { return "MT5"; }
long   TermBuild(void) { return TerminalInfoInteger(TERMINAL_BUILD); }
long   TermLogin(void) { return AccountInfoInteger(ACCOUNT_LOGIN); }
string TermUid(void) { return TtSha256Hex(TerminalInfoString(TERMINAL_DATA_PATH)); }

// Why automated trading is off, "" when it is on: the terminal's Algo Trading
// button, the expert's "Allow Algo Trading" property, and the permissions the broker
// sets on the account (ACCOUNT_TRADE_ALLOWED, ACCOUNT_TRADE_EXPERT): with any
// of them off the trade server would refuse every order.
string TermTradeBlock(void)
  {
   if(TerminalInfoInteger(TERMINAL_TRADE_ALLOWED) == 0)
      return "the terminal's Algo Trading button is off";
   if(MQLInfoInteger(MQL_TRADE_ALLOWED) == 0)
      return "the expert's Allow Algo Trading property is off";
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
   return "{" + JKV("login", JInt(AccountInfoInteger(ACCOUNT_LOGIN))) + "," +
          JKV("server", JStr(AccountInfoString(ACCOUNT_SERVER))) + "," +
          JKV("company", JStr(AccountInfoString(ACCOUNT_COMPANY))) + "," +
          JKV("currency", JStr(AccountInfoString(ACCOUNT_CURRENCY))) + "," +
          JKV("leverage", JInt(AccountInfoInteger(ACCOUNT_LEVERAGE))) + "," +
          JKV("trade_mode", JStr(TtTradeModeName())) + "}";
  }

string TermAccountInfoJson(void)
  {
   double margin = AccountInfoDouble(ACCOUNT_MARGIN);
   return "{" + JKV("login", JInt(AccountInfoInteger(ACCOUNT_LOGIN))) + "," +
          JKV("name", JStr(AccountInfoString(ACCOUNT_NAME))) + "," +
          JKV("server", JStr(AccountInfoString(ACCOUNT_SERVER))) + "," +
          JKV("company", JStr(AccountInfoString(ACCOUNT_COMPANY))) + "," +
          JKV("currency", JStr(AccountInfoString(ACCOUNT_CURRENCY))) + "," +
          JKV("leverage", JInt(AccountInfoInteger(ACCOUNT_LEVERAGE))) + "," +
          JKV("trade_mode", JStr(TtTradeModeName())) + "," +
          JKV("balance", JNum(AccountInfoDouble(ACCOUNT_BALANCE))) + "," +
          JKV("equity", JNum(AccountInfoDouble(ACCOUNT_EQUITY))) + "," +
          JKV("margin", JNum(margin)) + "," +
          JKV("free_margin", JNum(AccountInfoDouble(ACCOUNT_MARGIN_FREE))) + "," +
          JKV("margin_level", JOptNum(AccountInfoDouble(ACCOUNT_MARGIN_LEVEL), margin > 0)) + "," +
          JKV("profit", JNum(AccountInfoDouble(ACCOUNT_PROFIT))) + "}";
  }

void TermAccountNumbers(double &balance, double &equity, double &margin)
  {
   balance = AccountInfoDouble(ACCOUNT_BALANCE);
   equity = AccountInfoDouble(ACCOUNT_EQUITY);
   margin = AccountInfoDouble(ACCOUNT_MARGIN);
  }

//--- time --------------------------------------------------------------

// Trade server time minus UTC, in seconds (whole half hours).
long TtServerOffset(void)
  {
   long d = (long)(TimeTradeServer() - TimeGMT());
   return (long)MathRound(d / 1800.0) * 1800;
  }

long TtUtcMs(const long serverMs) { return serverMs - TtServerOffset() * 1000; }
long TtUtcMsOfServerTime(const datetime t) { return ((long)t - TtServerOffset()) * 1000; }
datetime TtServerTime(const long utcMs) { return (datetime)(utcMs / 1000 + TtServerOffset()); }

bool TermQuote(const string symbol, double &bid, double &ask, long &timeMs)
  {
   MqlTick t;
   if(!SymbolInfoTick(symbol, t))
      return false;
   bid = t.bid;
   ask = t.ask;
   timeMs = TtUtcMs((long)t.time_msc);
   return t.time != 0;
  }

//--- names ---------------------------------------------------------------

string TtOrderTypeName(const long t)
  {
   if(t == ORDER_TYPE_BUY) return "BUY";
   if(t == ORDER_TYPE_SELL) return "SELL";
   if(t == ORDER_TYPE_BUY_LIMIT) return "BUY_LIMIT";
   if(t == ORDER_TYPE_SELL_LIMIT) return "SELL_LIMIT";
   if(t == ORDER_TYPE_BUY_STOP) return "BUY_STOP";
   if(t == ORDER_TYPE_SELL_STOP) return "SELL_STOP";
   if(t == ORDER_TYPE_BUY_STOP_LIMIT) return "BUY_STOP_LIMIT";
   if(t == ORDER_TYPE_SELL_STOP_LIMIT) return "SELL_STOP_LIMIT";
   return "";
  }

string TtExpirationName(const long t)
  {
   if(t == ORDER_TIME_DAY) return "DAY";
   if(t == ORDER_TIME_SPECIFIED) return "SPECIFIED";
   if(t == ORDER_TIME_SPECIFIED_DAY) return "SPECIFIED_DAY";
   return "GTC";
  }

ENUM_ORDER_TYPE_TIME TtExpirationMode(const string m)
  {
   if(m == "DAY") return ORDER_TIME_DAY;
   if(m == "SPECIFIED") return ORDER_TIME_SPECIFIED;
   if(m == "SPECIFIED_DAY") return ORDER_TIME_SPECIFIED_DAY;
   return ORDER_TIME_GTC;
  }

// The SYMBOL_EXPIRATION_MODE flag of an ORDER_TIME_* mode.
long TtExpirationFlag(const ENUM_ORDER_TYPE_TIME t)
  {
   if(t == ORDER_TIME_DAY) return SYMBOL_EXPIRATION_DAY;
   if(t == ORDER_TIME_SPECIFIED) return SYMBOL_EXPIRATION_SPECIFIED;
   if(t == ORDER_TIME_SPECIFIED_DAY) return SYMBOL_EXPIRATION_SPECIFIED_DAY;
   return SYMBOL_EXPIRATION_GTC;
  }

ENUM_ORDER_TYPE TtOrderType(const string t)
  {
   if(t == "SELL") return ORDER_TYPE_SELL;
   if(t == "BUY_LIMIT") return ORDER_TYPE_BUY_LIMIT;
   if(t == "SELL_LIMIT") return ORDER_TYPE_SELL_LIMIT;
   if(t == "BUY_STOP") return ORDER_TYPE_BUY_STOP;
   if(t == "SELL_STOP") return ORDER_TYPE_SELL_STOP;
   if(t == "BUY_STOP_LIMIT") return ORDER_TYPE_BUY_STOP_LIMIT;
   if(t == "SELL_STOP_LIMIT") return ORDER_TYPE_SELL_STOP_LIMIT;
   return ORDER_TYPE_BUY;
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

//--- argument helpers ------------------------------------------------------

bool TtSymbolArg(TtJson &j, const int c, string &symbol, TtErr &err)
  {
   symbol = j.GetStr(c, "symbol", "");
   if(symbol == "")
      return TtFail(err, TT_INVALID_ARGUMENT, "`symbol` is required");
   bool custom = false;
   if(!SymbolExist(symbol, custom))
      return TtFail(err, TT_NOT_FOUND, "unknown symbol `" + symbol + "`; the `symbols` command lists them");
   SymbolSelect(symbol, true);
   return true;
  }

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

//--- account, positions, orders ----------------------------------------------

bool TtCmdAccountInfo(string &result)
  {
   string info = TermAccountInfoJson();
   result = "{\"kind\":\"account_info\"," + StringSubstr(info, 1);
   return true;
  }

// Commission of a position: the sum over its deals so far.
double TtPositionCommission(const long positionId)
  {
   double c = 0;
   if(!HistorySelectByPosition(positionId))
      return 0;
   int n = HistoryDealsTotal();
   for(int i = 0; i < n; i++)
     {
      ulong d = HistoryDealGetTicket(i);
      if(d > 0)
         c += HistoryDealGetDouble(d, DEAL_COMMISSION);
     }
   return c;
  }

// The selected position as a protocol Position.
string TtPositionJson(void)
  {
   long ticket = PositionGetInteger(POSITION_TICKET);
   string side = "buy";
   if(PositionGetInteger(POSITION_TYPE) == POSITION_TYPE_SELL)
      side = "sell";
   double sl = PositionGetDouble(POSITION_SL);
   double tp = PositionGetDouble(POSITION_TP);
   double swap = PositionGetDouble(POSITION_SWAP);
   double profit = PositionGetDouble(POSITION_PROFIT);
   string symbol = PositionGetString(POSITION_SYMBOL);
   double volume = PositionGetDouble(POSITION_VOLUME);
   double open = PositionGetDouble(POSITION_PRICE_OPEN);
   long openMs = PositionGetInteger(POSITION_TIME_MSC);
   double current = PositionGetDouble(POSITION_PRICE_CURRENT);
   long magic = PositionGetInteger(POSITION_MAGIC);
   string comment = PositionGetString(POSITION_COMMENT);
   long identifier = PositionGetInteger(POSITION_IDENTIFIER);
   double commission = TtPositionCommission(identifier);
   return "{" + JKV("ticket", JInt(ticket)) + "," + JKV("symbol", JStr(symbol)) + "," +
          JKV("side", JStr(side)) + "," + JKV("volume", JNum(volume)) + "," +
          JKV("open_price", JNum(open)) + "," + JKV("open_time", JInt(TtUtcMs(openMs))) + "," +
          JKV("stop_loss", JOptNum(sl, sl != 0)) + "," + JKV("take_profit", JOptNum(tp, tp != 0)) + "," +
          JKV("current_price", JNum(current)) + "," + JKV("swap", JNum(swap)) + "," +
          JKV("commission", JNum(commission)) + "," + JKV("profit", JNum(profit)) + "," +
          JKV("magic", JInt(magic)) + "," + JKV("comment", JStr(comment)) + "}";
  }

bool TtCmdPositions(TtJson &j, const int c, string &result)
  {
   string filter = j.GetStr(c, "symbol", "");
   string items = "";
   int n = PositionsTotal();
   TtLongs tickets;
   ArrayResize(tickets.v, n);
   for(int i = 0; i < n; i++)
      tickets.v[i] = (long)PositionGetTicket(i);
   bool firstItem = true;
   for(int i = 0; i < n; i++)
     {
      if(!PositionSelectByTicket((ulong)tickets.v[i]))
         continue;
      if(filter != "" && PositionGetString(POSITION_SYMBOL) != filter)
         continue;
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, TtPositionJson());
     }
   result = "{\"kind\":\"positions\",\"positions\":[" + items + "]}";
   return true;
  }

bool TtCmdOrders(TtJson &j, const int c, string &result)
  {
   string filter = j.GetStr(c, "symbol", "");
   string items = "";
   bool firstItem = true;
   int n = OrdersTotal();
   for(int i = 0; i < n; i++)
     {
      ulong ticket = OrderGetTicket(i);
      if(ticket == 0)
         continue;
      string type = TtOrderTypeName(OrderGetInteger(ORDER_TYPE));
      if(type == "" || type == "BUY" || type == "SELL")
         continue;
      string symbol = OrderGetString(ORDER_SYMBOL);
      if(filter != "" && symbol != filter)
         continue;
      double sl = OrderGetDouble(ORDER_SL);
      double tp = OrderGetDouble(ORDER_TP);
      long typeTime = OrderGetInteger(ORDER_TYPE_TIME);
      bool timed = typeTime == ORDER_TIME_SPECIFIED || typeTime == ORDER_TIME_SPECIFIED_DAY;
      string extra = "";
      if(TtIsStopLimitType(type))
         extra = "," + JKV("stop_limit_price", JNum(OrderGetDouble(ORDER_PRICE_STOPLIMIT)));
      extra = extra + "," + JKV("expiration_mode", JStr(TtExpirationName(typeTime)));
      if(timed)
         extra = extra + "," + JKV("expiration", JInt(TtUtcMsOfServerTime((datetime)OrderGetInteger(ORDER_TIME_EXPIRATION))));
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, "{" + JKV("ticket", JInt((long)ticket)) + "," + JKV("symbol", JStr(symbol)) + "," +
                JKV("order_type", JStr(type)) + "," + JKV("volume", JNum(OrderGetDouble(ORDER_VOLUME_CURRENT))) + "," +
                JKV("price", JNum(OrderGetDouble(ORDER_PRICE_OPEN))) + "," +
                JKV("stop_loss", JOptNum(sl, sl != 0)) + "," + JKV("take_profit", JOptNum(tp, tp != 0)) + "," +
                JKV("time_setup", JInt(TtUtcMs(OrderGetInteger(ORDER_TIME_SETUP_MSC)))) + "," +
                JKV("magic", JInt(OrderGetInteger(ORDER_MAGIC))) + "," +
                JKV("comment", JStr(OrderGetString(ORDER_COMMENT))) + extra + "}");
     }
   result = "{\"kind\":\"orders\",\"orders\":[" + items + "]}";
   return true;
  }

//--- history -------------------------------------------------------------

// A deal from the history as a protocol Deal.
string TtDealJson(const ulong d)
  {
   long type = HistoryDealGetInteger(d, DEAL_TYPE);
   long entry = HistoryDealGetInteger(d, DEAL_ENTRY);
   double profit = HistoryDealGetDouble(d, DEAL_PROFIT);
   string side = "buy";
   string entryName = "in";
   if(type == DEAL_TYPE_BUY || type == DEAL_TYPE_SELL)
     {
      if(type == DEAL_TYPE_SELL)
         side = "sell";
      // DEAL_ENTRY_OUT_BY: one of the two deals of a close-by; OUT and
      // INOUT (a netting reversal closes first) are exits.
      if(entry == DEAL_ENTRY_OUT_BY)
         entryName = "out_by";
      else if(entry != DEAL_ENTRY_IN)
         entryName = "out";
     }
   else
     {
      entryName = "balance";
      if(profit < 0)
         side = "sell";
     }
   long reason = HistoryDealGetInteger(d, DEAL_REASON);
   string comment = HistoryDealGetString(d, DEAL_COMMENT);
   if(reason == DEAL_REASON_SL)
      comment = "sl";
   else if(reason == DEAL_REASON_TP)
      comment = "tp";
   return "{" + JKV("ticket", JInt((long)d)) + "," + JKV("order", JInt(HistoryDealGetInteger(d, DEAL_ORDER))) + "," +
          JKV("position", JInt(HistoryDealGetInteger(d, DEAL_POSITION_ID))) + "," +
          JKV("symbol", JStr(HistoryDealGetString(d, DEAL_SYMBOL))) + "," + JKV("side", JStr(side)) + "," +
          JKV("entry", JStr(entryName)) + "," + JKV("volume", JNum(HistoryDealGetDouble(d, DEAL_VOLUME))) + "," +
          JKV("price", JNum(HistoryDealGetDouble(d, DEAL_PRICE))) + "," +
          JKV("time", JInt(TtUtcMs(HistoryDealGetInteger(d, DEAL_TIME_MSC)))) + "," +
          JKV("profit", JNum(profit)) + "," + JKV("swap", JNum(HistoryDealGetDouble(d, DEAL_SWAP))) + "," +
          JKV("commission", JNum(HistoryDealGetDouble(d, DEAL_COMMISSION))) + "," +
          JKV("magic", JInt(HistoryDealGetInteger(d, DEAL_MAGIC))) + "," + JKV("comment", JStr(comment)) + "}";
  }

bool TtCmdHistoryDeals(TtJson &j, const int c, string &result, TtErr &err)
  {
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   if(!HistorySelect(TtServerTime(from) - 1, TtServerTime(to) + 1))
      return TtFail(err, TT_INTERNAL, "HistorySelect failed, error " + IntegerToString(GetLastError()));
   string items = "";
   bool firstItem = true;
   int n = HistoryDealsTotal();
   for(int i = 0; i < n; i++)
     {
      ulong d = HistoryDealGetTicket(i);
      if(d == 0)
         continue;
      long t = TtUtcMs(HistoryDealGetInteger(d, DEAL_TIME_MSC));
      if(t < from || t >= to)
         continue;
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, TtDealJson(d));
     }
   result = "{\"kind\":\"deals\",\"deals\":[" + items + "]}";
   return true;
  }

string TtOrderStateName(const long s)
  {
   if(s == ORDER_STATE_CANCELED) return "canceled";
   if(s == ORDER_STATE_REJECTED) return "rejected";
   if(s == ORDER_STATE_EXPIRED) return "expired";
   return "filled";
  }

bool TtCmdHistoryOrders(TtJson &j, const int c, string &result, TtErr &err)
  {
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   if(!HistorySelect(TtServerTime(from) - 1, TtServerTime(to) + 1))
      return TtFail(err, TT_INTERNAL, "HistorySelect failed, error " + IntegerToString(GetLastError()));
   string items = "";
   bool firstItem = true;
   int n = HistoryOrdersTotal();
   for(int i = 0; i < n; i++)
     {
      ulong o = HistoryOrderGetTicket(i);
      if(o == 0)
         continue;
      long typeCode = HistoryOrderGetInteger(o, ORDER_TYPE);
      // A close-by is in the history as an order of its own type.
      string type = typeCode == ORDER_TYPE_CLOSE_BY ? "CLOSE_BY" : TtOrderTypeName(typeCode);
      if(type == "")
         continue;
      long done = TtUtcMs(HistoryOrderGetInteger(o, ORDER_TIME_DONE_MSC));
      if(done < from || done >= to)
         continue;
      double price = HistoryOrderGetDouble(o, ORDER_PRICE_OPEN);
      if(price == 0)
         price = HistoryOrderGetDouble(o, ORDER_PRICE_CURRENT);
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, "{" + JKV("ticket", JInt((long)o)) + "," + JKV("symbol", JStr(HistoryOrderGetString(o, ORDER_SYMBOL))) + "," +
                JKV("order_type", JStr(type)) + "," + JKV("volume", JNum(HistoryOrderGetDouble(o, ORDER_VOLUME_INITIAL))) + "," +
                JKV("price", JNum(price)) + "," + JKV("state", JStr(TtOrderStateName(HistoryOrderGetInteger(o, ORDER_STATE)))) + "," +
                JKV("time_setup", JInt(TtUtcMs(HistoryOrderGetInteger(o, ORDER_TIME_SETUP_MSC)))) + "," +
                JKV("time_done", JInt(done)) + "," + JKV("position", JInt(HistoryOrderGetInteger(o, ORDER_POSITION_ID))) + "," +
                JKV("comment", JStr(HistoryOrderGetString(o, ORDER_COMMENT))) + "," +
                JKV("magic", JInt(HistoryOrderGetInteger(o, ORDER_MAGIC))) + "}");
     }
   result = "{\"kind\":\"history_orders\",\"orders\":[" + items + "]}";
   return true;
  }

//--- market data ---------------------------------------------------------

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

string TtSwapModeName(const long m)
  {
   if(m == SYMBOL_SWAP_MODE_DISABLED) return "disabled";
   if(m == SYMBOL_SWAP_MODE_CURRENCY_SYMBOL || m == SYMBOL_SWAP_MODE_CURRENCY_MARGIN || m == SYMBOL_SWAP_MODE_CURRENCY_DEPOSIT) return "currency";
   if(m == SYMBOL_SWAP_MODE_INTEREST_CURRENT || m == SYMBOL_SWAP_MODE_INTEREST_OPEN) return "interest";
   return "points";
  }

string TtMarginModeName(const long m)
  {
   if(m == SYMBOL_CALC_MODE_FOREX || m == SYMBOL_CALC_MODE_FOREX_NO_LEVERAGE) return "forex";
   if(m == SYMBOL_CALC_MODE_CFDLEVERAGE) return "cfd_leverage";
   return "cfd";
  }

// SYMBOL_EXPIRATION_MODE as the protocol's list.
string TtExpirationModesJson(const string s)
  {
   long f = SymbolInfoInteger(s, SYMBOL_EXPIRATION_MODE);
   string items = "";
   if((f & SYMBOL_EXPIRATION_GTC) != 0)
      items = items + ",\"GTC\"";
   if((f & SYMBOL_EXPIRATION_DAY) != 0)
      items = items + ",\"DAY\"";
   if((f & SYMBOL_EXPIRATION_SPECIFIED) != 0)
      items = items + ",\"SPECIFIED\"";
   if((f & SYMBOL_EXPIRATION_SPECIFIED_DAY) != 0)
      items = items + ",\"SPECIFIED_DAY\"";
   if(items == "")
      return "[]";
   return "[" + StringSubstr(items, 1) + "]";
  }

// SYMBOL_FILLING_MODE (FOK, IOC) plus RETURN outside market execution.
string TtFillingModesJson(const string s)
  {
   long f = SymbolInfoInteger(s, SYMBOL_FILLING_MODE);
   string items = "";
   if((f & SYMBOL_FILLING_FOK) != 0)
      items = items + ",\"FOK\"";
   if((f & SYMBOL_FILLING_IOC) != 0)
      items = items + ",\"IOC\"";
   if(SymbolInfoInteger(s, SYMBOL_TRADE_EXEMODE) != SYMBOL_TRADE_EXECUTION_MARKET)
      items = items + ",\"RETURN\"";
   if(items == "")
      return "[]";
   return "[" + StringSubstr(items, 1) + "]";
  }

bool TtCmdSymbolSpec(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   double tickSize = SymbolInfoDouble(s, SYMBOL_TRADE_TICK_SIZE);
   double contract = SymbolInfoDouble(s, SYMBOL_TRADE_CONTRACT_SIZE);
   double initialRate = 1;
   double maintenanceRate = 1;
   if(!SymbolInfoMarginRate(s, ORDER_TYPE_BUY, initialRate, maintenanceRate))
      initialRate = 1;
   result = "{\"kind\":\"symbol_spec\"," + JKV("name", JStr(s)) + "," +
            JKV("description", JStr(SymbolInfoString(s, SYMBOL_DESCRIPTION))) + "," +
            JKV("currency_base", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_BASE))) + "," +
            JKV("currency_profit", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_PROFIT))) + "," +
            JKV("currency_margin", JStr(SymbolInfoString(s, SYMBOL_CURRENCY_MARGIN))) + "," +
            JKV("digits", JInt(SymbolInfoInteger(s, SYMBOL_DIGITS))) + "," +
            JKV("point", JNum(SymbolInfoDouble(s, SYMBOL_POINT))) + "," +
            JKV("contract_size", JNum(contract)) + "," +
            JKV("tick_size", JNum(tickSize)) + "," +
            JKV("tick_value", JNum(tickSize * contract)) + "," +
            JKV("volume_min", JNum(SymbolInfoDouble(s, SYMBOL_VOLUME_MIN))) + "," +
            JKV("volume_max", JNum(SymbolInfoDouble(s, SYMBOL_VOLUME_MAX))) + "," +
            JKV("volume_step", JNum(SymbolInfoDouble(s, SYMBOL_VOLUME_STEP))) + "," +
            JKV("stops_level", JInt(SymbolInfoInteger(s, SYMBOL_TRADE_STOPS_LEVEL))) + "," +
            JKV("swap_long", JNum(SymbolInfoDouble(s, SYMBOL_SWAP_LONG))) + "," +
            JKV("swap_short", JNum(SymbolInfoDouble(s, SYMBOL_SWAP_SHORT))) + "," +
            JKV("swap_mode", JStr(TtSwapModeName(SymbolInfoInteger(s, SYMBOL_SWAP_MODE)))) + "," +
            JKV("swap_triple_day", JInt(SymbolInfoInteger(s, SYMBOL_SWAP_ROLLOVER3DAYS))) + "," +
            JKV("margin_mode", JStr(TtMarginModeName(SymbolInfoInteger(s, SYMBOL_TRADE_CALC_MODE)))) + "," +
            JKV("margin_rate", JNum(initialRate)) + "," +
            JKV("sessions", TtSessionsJson(s, TtServerOffset())) + "," +
            JKV("expiration_modes", TtExpirationModesJson(s)) + "," +
            JKV("filling_modes", TtFillingModesJson(s)) + "}";
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
      long to = j.GetLong(c, "to", TtUtcMsOfServerTime(TimeTradeServer()) + 86400000);
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

bool TtCmdTicks(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   TtTicks ticks;
   long off = TtServerOffset() * 1000;
   int n = 0;
   if(to > from)
      n = CopyTicksRange(s, ticks.v, COPY_TICKS_INFO, (ulong)(from + off), (ulong)(to - 1 + off));
   if(n < 0)
      n = 0;
   int start = 0;
   long limit = j.GetLong(c, "limit", 0);
   if(j.Has(c, "limit") && limit >= 0 && n > limit)
      start = n - (int)limit;
   string items = "";
   for(int i = start; i < n; i++)
     {
      if(i > start)
         StringAdd(items, ",");
      StringAdd(items, "{\"symbol\":" + JStr(s) + ",\"bid\":" + JNum(ticks.v[i].bid) + ",\"ask\":" + JNum(ticks.v[i].ask) +
                ",\"time\":" + JInt(TtUtcMs((long)ticks.v[i].time_msc)) + "}");
     }
   result = "{\"kind\":\"ticks\"," + JKV("symbol", JStr(s)) + ",\"ticks\":[" + items + "]}";
   return true;
  }

//--- trading ---------------------------------------------------------------

ENUM_ORDER_TYPE_FILLING TtFilling(const string symbol, const bool market)
  {
   if(!market)
      return ORDER_FILLING_RETURN;
   long modes = SymbolInfoInteger(symbol, SYMBOL_FILLING_MODE);
   if((modes & SYMBOL_FILLING_FOK) != 0)
      return ORDER_FILLING_FOK;
   if((modes & SYMBOL_FILLING_IOC) != 0)
      return ORDER_FILLING_IOC;
   return ORDER_FILLING_RETURN;
  }

// `expiration_mode` (absent: GTC) and `expiration` (unix ms) of a pending
// order or a modification into type_time and expiration (server time).
bool TtExpirationArgs(TtJson &j, const int o, MqlTradeRequest &req, TtErr &err)
  {
   string mode = j.GetStr(o, "expiration_mode", "");
   if(mode == "")
      mode = "GTC";
   if(!TtIsExpirationMode(mode))
      return TtFail(err, TT_INVALID_ARGUMENT, "`expiration_mode` must be GTC, DAY, SPECIFIED or SPECIFIED_DAY");
   req.type_time = TtExpirationMode(mode);
   req.expiration = 0;
   if(mode == "SPECIFIED" || mode == "SPECIFIED_DAY")
     {
      if(!j.Has(o, "expiration") || j.GetLong(o, "expiration", 0) <= 0)
         return TtFail(err, TT_INVALID_ARGUMENT, "`expiration` (unix ms) is required for " + mode);
      req.expiration = TtServerTime(j.GetLong(o, "expiration", 0));
     }
   return true;
  }

// The symbol allows the request's expiration mode (SYMBOL_EXPIRATION_MODE).
bool TtExpirationAllowed(const string symbol, const ENUM_ORDER_TYPE_TIME t, TtErr &err)
  {
   long flags = SymbolInfoInteger(symbol, SYMBOL_EXPIRATION_MODE);
   if((flags & TtExpirationFlag(t)) != 0)
      return true;
   return TtReject(err, "invalid_expiration", symbol + " does not allow expiration mode " + TtExpirationName(t) +
                   " (SYMBOL_EXPIRATION_MODE " + IntegerToString(flags) + ")");
  }

// Builds the trade request of a protocol OrderRequest.
bool TtBuildOrder(TtJson &j, const int o, MqlTradeRequest &req, TtErr &err)
  {
   if(!j.IsObject(o))
      return TtFail(err, TT_INVALID_ARGUMENT, "`order` is required");
   string symbol = "";
   if(!TtSymbolArg(j, o, symbol, err))
      return false;
   string type = j.GetStr(o, "order_type", "");
   if(!TtIsOrderType(type))
      return TtFail(err, TT_INVALID_ARGUMENT, "`order_type` must be BUY, SELL, BUY_LIMIT, SELL_LIMIT, BUY_STOP, SELL_STOP, BUY_STOP_LIMIT or SELL_STOP_LIMIT");
   if(!j.Has(o, "volume"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`volume` is required");
   bool market = type == "BUY" || type == "SELL";
   int digits = (int)SymbolInfoInteger(symbol, SYMBOL_DIGITS);
   MqlTick tick;
   SymbolInfoTick(symbol, tick);
   ZeroMemory(req);
   req.symbol = symbol;
   req.volume = j.GetNum(o, "volume", 0);
   req.type = TtOrderType(type);
   if(market)
     {
      req.action = TRADE_ACTION_DEAL;
      if(type == "BUY")
         req.price = tick.ask;
      else
         req.price = tick.bid;
     }
   else
     {
      if(!j.Has(o, "price"))
         return TtFail(err, TT_INVALID_ARGUMENT, "`price` is required for pending orders");
      req.action = TRADE_ACTION_PENDING;
      req.price = NormalizeDouble(j.GetNum(o, "price", 0), digits);
      if(TtIsStopLimitType(type))
        {
         if(!j.Has(o, "stop_limit_price") || j.GetNum(o, "stop_limit_price", 0) <= 0)
            return TtFail(err, TT_INVALID_ARGUMENT, "`stop_limit_price` is required for " + type + " orders");
         req.stoplimit = NormalizeDouble(j.GetNum(o, "stop_limit_price", 0), digits);
        }
      if(!TtExpirationArgs(j, o, req, err))
         return false;
     }
   req.sl = NormalizeDouble(j.GetNum(o, "stop_loss", 0), digits);
   req.tp = NormalizeDouble(j.GetNum(o, "take_profit", 0), digits);
   req.deviation = (ulong)j.GetLong(o, "deviation_points", g_ttDeviation);
   long magic = j.GetLong(o, "magic", 0);
   if(magic == 0)
      magic = g_ttMagic;
   req.magic = (ulong)magic;
   req.comment = j.GetStr(o, "comment", "");
   req.type_filling = TtFilling(symbol, market);
   string filling = j.GetStr(o, "filling", "");
   if(filling == "FOK")
      req.type_filling = ORDER_FILLING_FOK;
   else if(filling == "IOC")
      req.type_filling = ORDER_FILLING_IOC;
   else if(filling == "RETURN")
      req.type_filling = ORDER_FILLING_RETURN;
   else if(filling != "")
      return TtFail(err, TT_INVALID_ARGUMENT, "`filling` must be FOK, IOC or RETURN");
   return true;
  }

// Sends a request; false with TRADE_REJECTED (retcode name) unless the
// server answered done or placed.
bool TtSend(MqlTradeRequest &req, MqlTradeResult &res, TtErr &err)
  {
   ZeroMemory(res);
   ResetLastError();
   bool sent = OrderSend(req, res);
   long rc = res.retcode;
   if(sent && (rc == TRADE_RETCODE_DONE || rc == TRADE_RETCODE_PLACED || rc == TRADE_RETCODE_DONE_PARTIAL))
      return true;
   if(rc == 0)
     {
      int e = GetLastError();
      if(e == 4752)
         return TtFail(err, TT_TRADING_DISABLED, "trading by experts is disabled in the terminal (error 4752)");
      return TtReject(err, "send_failed", "OrderSend failed, error " + IntegerToString(e));
     }
   string comment = res.comment;
   if(comment == "")
      comment = TtRetcodeName(rc);
   return TtReject(err, TtRetcodeName(rc), comment + " (retcode " + IntegerToString(rc) + ")");
  }

string TtTradeJson(const string retcode, const long order, const long deal, const long position, const double volume, const double price, const string comment)
  {
   return "{" + JKV("retcode", JStr(retcode)) + "," + JKV("order", JInt(order)) + "," + JKV("deal", JInt(deal)) + "," +
          JKV("position", JInt(position)) + "," + JKV("volume", JNum(volume)) + "," + JKV("price", JNum(price)) + "," +
          JKV("comment", JStr(comment)) + "}";
  }

// Position id of a deal (the opening order's ticket when the deal is not in
// the history yet).
long TtDealPosition(const ulong deal, const long fallback)
  {
   if(deal > 0 && HistoryDealSelect(deal))
     {
      long p = HistoryDealGetInteger(deal, DEAL_POSITION_ID);
      if(p > 0)
         return p;
     }
   return fallback;
  }

bool TtCmdOrderCheck(TtJson &j, const int c, string &result, TtErr &err)
  {
   MqlTradeRequest req;
   if(!TtBuildOrder(j, j.Get(c, "order"), req, err))
      return false;
   MqlTradeCheckResult check;
   ZeroMemory(check);
   bool ok = OrderCheck(req, check);
   long rc = check.retcode;
   bool valid = ok && (rc == 0 || rc == TRADE_RETCODE_DONE || rc == TRADE_RETCODE_PLACED);
   ENUM_ORDER_TYPE marginType = ORDER_TYPE_BUY;
   if(!TtIsBuyType(j.GetStr(j.Get(c, "order"), "order_type", "")))
      marginType = ORDER_TYPE_SELL;
   double margin = 0;
   if(!OrderCalcMargin(marginType, req.symbol, req.volume, req.price, margin))
      margin = 0;
   string retcode = "done";
   if(!valid)
      retcode = TtRetcodeName(rc);
   string comment = check.comment;
   result = "{\"kind\":\"order_check\"," + JKV("valid", JBool(valid)) + "," + JKV("retcode", JStr(retcode)) + "," +
            JKV("comment", JStr(comment)) + "," + JKV("price", JNum(req.price)) + "," + JKV("margin", JNum(margin)) + "," +
            JKV("free_margin_after", JNum(check.margin_free)) + "," +
            JKV("margin_level_after", JOptNum(check.margin_level, check.margin_level > 0)) + "}";
   return true;
  }

bool TtPlace(TtJson &j, const int o, string &trade, TtErr &err)
  {
   MqlTradeRequest req;
   if(!TtBuildOrder(j, o, req, err))
      return false;
   if(req.action == TRADE_ACTION_PENDING && !TtExpirationAllowed(req.symbol, req.type_time, err))
      return false;
   MqlTradeResult res;
   if(!TtSend(req, res, err))
      return false;
   string retcode = "done";
   if(res.retcode == TRADE_RETCODE_DONE_PARTIAL)
      retcode = "done_partial";
   if(req.action == TRADE_ACTION_PENDING)
      trade = TtTradeJson("placed", (long)res.order, 0, 0, req.volume, req.price, res.comment);
   else
      trade = TtTradeJson(retcode, (long)res.order, (long)res.deal, TtDealPosition(res.deal, (long)res.order), res.volume, res.price, res.comment);
   return true;
  }

// Closes `volume` lots (all when <= 0) of a position.
bool TtClose(const ulong ticket, const double volume, const long deviation, string &trade, TtErr &err)
  {
   if(!PositionSelectByTicket(ticket))
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString((long)ticket));
   string symbol = PositionGetString(POSITION_SYMBOL);
   double posVolume = PositionGetDouble(POSITION_VOLUME);
   double vol = volume;
   if(vol <= 0)
      vol = posVolume;
   if(vol > posVolume + 1e-9)
      return TtReject(err, "invalid_volume", "the position has only " + JNum(posVolume) + " lots");
   MqlTick tick;
   SymbolInfoTick(symbol, tick);
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_DEAL;
   req.position = ticket;
   req.symbol = symbol;
   req.volume = vol;
   if(PositionGetInteger(POSITION_TYPE) == POSITION_TYPE_BUY)
     {
      req.type = ORDER_TYPE_SELL;
      req.price = tick.bid;
     }
   else
     {
      req.type = ORDER_TYPE_BUY;
      req.price = tick.ask;
     }
   req.deviation = (ulong)deviation;
   req.magic = (ulong)PositionGetInteger(POSITION_MAGIC);
   req.type_filling = TtFilling(symbol, true);
   MqlTradeResult res;
   if(!TtSend(req, res, err))
      return false;
   trade = TtTradeJson("done", (long)res.order, (long)res.deal, (long)ticket, res.volume, res.price, res.comment);
   return true;
  }

bool TtCmdClose(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` is required");
   string trade;
   if(!TtClose((ulong)j.GetLong(c, "ticket", 0), j.GetNum(c, "volume", 0), j.GetLong(c, "deviation_points", g_ttDeviation), trade, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(trade, 1);
   return true;
  }

bool TtCmdModify(TtJson &j, const int c, string &result, TtErr &err)
  {
   ulong ticket = (ulong)j.GetLong(c, "ticket", 0);
   if(!PositionSelectByTicket(ticket))
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString((long)ticket));
   string symbol = PositionGetString(POSITION_SYMBOL);
   int digits = (int)SymbolInfoInteger(symbol, SYMBOL_DIGITS);
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_SLTP;
   req.position = ticket;
   req.symbol = symbol;
   req.sl = NormalizeDouble(j.GetNum(c, "stop_loss", 0), digits);
   req.tp = NormalizeDouble(j.GetNum(c, "take_profit", 0), digits);
   req.magic = (ulong)PositionGetInteger(POSITION_MAGIC);
   double volume = PositionGetDouble(POSITION_VOLUME);
   double open = PositionGetDouble(POSITION_PRICE_OPEN);
   MqlTradeResult res;
   string comment = "Position modified";
   if(PositionGetDouble(POSITION_SL) == req.sl && PositionGetDouble(POSITION_TP) == req.tp)
      comment = "no changes";
   else if(!TtSend(req, res, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", 0, 0, (long)ticket, volume, open, comment), 1);
   return true;
  }

bool TtCmdCancel(TtJson &j, const int c, string &result, TtErr &err)
  {
   ulong ticket = (ulong)j.GetLong(c, "ticket", 0);
   if(!OrderSelect(ticket))
      return TtFail(err, TT_NOT_FOUND, "no pending order with ticket " + IntegerToString((long)ticket));
   double volume = OrderGetDouble(ORDER_VOLUME_CURRENT);
   double price = OrderGetDouble(ORDER_PRICE_OPEN);
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_REMOVE;
   req.order = ticket;
   MqlTradeResult res;
   if(!TtSend(req, res, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", (long)ticket, 0, 0, volume, price, res.comment), 1);
   return true;
  }

bool TtCmdReverse(TtJson &j, const int c, string &result, TtErr &err)
  {
   ulong ticket = (ulong)j.GetLong(c, "ticket", 0);
   if(!PositionSelectByTicket(ticket))
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString((long)ticket));
   string symbol = PositionGetString(POSITION_SYMBOL);
   double volume = PositionGetDouble(POSITION_VOLUME);
   bool wasBuy = PositionGetInteger(POSITION_TYPE) == POSITION_TYPE_BUY;
   long magic = PositionGetInteger(POSITION_MAGIC);
   string comment = PositionGetString(POSITION_COMMENT);
   string closeTrade;
   if(!TtClose(ticket, volume, g_ttDeviation, closeTrade, err))
      return false;
   MqlTick tick;
   SymbolInfoTick(symbol, tick);
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_DEAL;
   req.symbol = symbol;
   req.volume = volume;
   if(wasBuy)
     {
      req.type = ORDER_TYPE_SELL;
      req.price = tick.bid;
     }
   else
     {
      req.type = ORDER_TYPE_BUY;
      req.price = tick.ask;
     }
   req.deviation = (ulong)g_ttDeviation;
   req.magic = (ulong)magic;
   req.comment = comment;
   req.type_filling = TtFilling(symbol, true);
   MqlTradeResult res;
   if(!TtSend(req, res, err))
     {
      err.message = "the position was closed but the opposite order failed: " + err.message;
      return false;
     }
   string openTrade = TtTradeJson("done", (long)res.order, (long)res.deal, TtDealPosition(res.deal, (long)res.order), res.volume, res.price, res.comment);
   result = "{\"kind\":\"reverse\",\"close\":" + closeTrade + ",\"open\":" + openTrade + "}";
   return true;
  }

// modify_order: a pending order's whole new state (TRADE_ACTION_MODIFY):
// price, stop-limit price, SL and TP (absent = removed), expiration.
bool TtCmdModifyOrder(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` is required");
   if(!j.Has(c, "price"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`price` is required (the order's new price)");
   ulong ticket = (ulong)j.GetLong(c, "ticket", 0);
   if(!OrderSelect(ticket))
      return TtFail(err, TT_NOT_FOUND, "no pending order with ticket " + IntegerToString((long)ticket));
   string symbol = OrderGetString(ORDER_SYMBOL);
   string type = TtOrderTypeName(OrderGetInteger(ORDER_TYPE));
   double volume = OrderGetDouble(ORDER_VOLUME_CURRENT);
   int digits = (int)SymbolInfoInteger(symbol, SYMBOL_DIGITS);
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_MODIFY;
   req.order = ticket;
   req.symbol = symbol;
   req.price = NormalizeDouble(j.GetNum(c, "price", 0), digits);
   if(TtIsStopLimitType(type))
     {
      if(!j.Has(c, "stop_limit_price") || j.GetNum(c, "stop_limit_price", 0) <= 0)
         return TtFail(err, TT_INVALID_ARGUMENT, "`stop_limit_price` is required for a " + type + " order");
      req.stoplimit = NormalizeDouble(j.GetNum(c, "stop_limit_price", 0), digits);
     }
   req.sl = NormalizeDouble(j.GetNum(c, "stop_loss", 0), digits);
   req.tp = NormalizeDouble(j.GetNum(c, "take_profit", 0), digits);
   req.type_filling = (ENUM_ORDER_TYPE_FILLING)OrderGetInteger(ORDER_TYPE_FILLING);
   if(!TtExpirationArgs(j, c, req, err))
      return false;
   if(!TtExpirationAllowed(symbol, req.type_time, err))
      return false;
   MqlTradeResult res;
   if(!TtSend(req, res, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", (long)ticket, 0, 0, volume, req.price, res.comment), 1);
   return true;
  }

// close_by: position `ticket` closed by the opposite `ticket_by`
// (TRADE_ACTION_CLOSE_BY; hedging accounts only).
bool TtCmdCloseBy(TtJson &j, const int c, string &result, TtErr &err)
  {
   if(!j.Has(c, "ticket") || !j.Has(c, "ticket_by"))
      return TtFail(err, TT_INVALID_ARGUMENT, "`ticket` and `ticket_by` are required");
   if(AccountInfoInteger(ACCOUNT_MARGIN_MODE) != ACCOUNT_MARGIN_MODE_RETAIL_HEDGING)
      return TtReject(err, "invalid_request", "close by needs a hedging account (ACCOUNT_MARGIN_MODE_RETAIL_HEDGING); this one nets");
   ulong ticket = (ulong)j.GetLong(c, "ticket", 0);
   ulong by = (ulong)j.GetLong(c, "ticket_by", 0);
   if(!PositionSelectByTicket(by))
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString((long)by));
   if(!PositionSelectByTicket(ticket))
      return TtFail(err, TT_NOT_FOUND, "no open position with ticket " + IntegerToString((long)ticket));
   MqlTradeRequest req;
   ZeroMemory(req);
   req.action = TRADE_ACTION_CLOSE_BY;
   req.position = ticket;
   req.position_by = by;
   req.symbol = PositionGetString(POSITION_SYMBOL);
   req.magic = (ulong)PositionGetInteger(POSITION_MAGIC);
   MqlTradeResult res;
   if(!TtSend(req, res, err))
      return false;
   result = "{\"kind\":\"trade\"," + StringSubstr(TtTradeJson("done", (long)res.order, (long)res.deal, (long)ticket, res.volume, res.price, res.comment), 1);
   return true;
  }

//--- depth of market ------------------------------------------------------------

string TtBookResult(const string symbol, const bool subscribed)
  {
   return "{\"kind\":\"market_book_subscription\"," + JKV("symbol", JStr(symbol)) + "," + JKV("subscribed", JBool(subscribed)) + "}";
  }

bool TtCmdBookAdd(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   ResetLastError();
   if(!MarketBookAdd(s))
      return TtFail(err, TT_NOT_SUPPORTED, "MarketBookAdd(" + s + ") failed, error " + IntegerToString(GetLastError()) + ": no depth of market for this symbol");
   result = TtBookResult(s, true);
   return true;
  }

bool TtCmdBookRelease(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   ResetLastError();
   if(!MarketBookRelease(s))
      return TtFail(err, TT_INVALID_ARGUMENT, "MarketBookRelease(" + s + ") failed, error " + IntegerToString(GetLastError()) + ": not subscribed (market_book_add first)");
   result = TtBookResult(s, false);
   return true;
  }

string TtBookTypeName(const long t)
  {
   if(t == BOOK_TYPE_SELL) return "sell";
   if(t == BOOK_TYPE_BUY) return "buy";
   if(t == BOOK_TYPE_SELL_MARKET) return "sell_market";
   if(t == BOOK_TYPE_BUY_MARKET) return "buy_market";
   return "";
  }

bool TtCmdBookGet(TtJson &j, const int c, string &result, TtErr &err)
  {
   string s = "";
   if(!TtSymbolArg(j, c, s, err))
      return false;
   TtBookInfos book;
   ResetLastError();
   if(!MarketBookGet(s, book.v))
      return TtFail(err, TT_INVALID_ARGUMENT, "MarketBookGet(" + s + ") failed, error " + IntegerToString(GetLastError()) + ": subscribe with market_book_add first");
   string items = "";
   bool firstItem = true;
   for(int i = 0; i < ArraySize(book.v); i++)
     {
      string type = TtBookTypeName(book.v[i].type);
      if(type == "")
         continue;
      double volume = book.v[i].volume_real;
      if(volume <= 0)
         volume = (double)book.v[i].volume;
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, "{" + JKV("type", JStr(type)) + "," + JKV("price", JNum(book.v[i].price)) + "," + JKV("volume", JNum(volume)) + "}");
     }
   double bid = 0;
   double ask = 0;
   long t = 0;
   if(!TermQuote(s, bid, ask, t))
      t = TtUtcMsOfServerTime(TimeTradeServer());
   result = "{\"kind\":\"market_book\"," + JKV("symbol", JStr(s)) + "," + JKV("time", JInt(t)) + ",\"levels\":[" + items + "]}";
   return true;
  }

//--- calendar ------------------------------------------------------------

string TtCategoryName(const long sector)
  {
   if(sector == CALENDAR_SECTOR_PRICES) return "inflation";
   if(sector == CALENDAR_SECTOR_JOBS) return "employment";
   if(sector == CALENDAR_SECTOR_MONEY) return "central_bank";
   if(sector == CALENDAR_SECTOR_GDP) return "growth";
   if(sector == CALENDAR_SECTOR_TRADE) return "trade";
   if(sector == CALENDAR_SECTOR_GOVERNMENT) return "government";
   if(sector == CALENDAR_SECTOR_BUSINESS) return "business";
   if(sector == CALENDAR_SECTOR_CONSUMER) return "consumer";
   if(sector == CALENDAR_SECTOR_HOUSING) return "housing";
   if(sector == CALENDAR_SECTOR_TAXES) return "taxes";
   if(sector == CALENDAR_SECTOR_HOLIDAYS) return "holidays";
   if(sector == CALENDAR_SECTOR_MARKET) return "market";
   return "other";
  }

string TtCalendarValue(const long v)
  {
   if(v == LONG_MIN)
      return "";
   return JNum(v / 1000000.0);
  }

bool TtCmdCalendar(TtJson &j, const int c, string &result, TtErr &err)
  {
   long from = 0;
   long to = 0;
   if(!TtRangeArg(j, c, from, to, err))
      return false;
   if(to - from > (long)400 * 86400000)
      return TtFail(err, TT_INVALID_ARGUMENT, "a calendar request may cover at most 400 days");
   TtStrings currencies;
   int cur = j.Get(c, "currencies");
   for(int k = j.FirstChild(cur); k >= 0; k = j.NextSibling(k))
     {
      int m = ArraySize(currencies.v);
      ArrayResize(currencies.v, m + 1);
      currencies.v[m] = j.Str(k);
     }
   TtCalendarValues values;
   ResetLastError();
   int n = CalendarValueHistory(values.v, TtServerTime(from), TtServerTime(to));
   if(n < 0)
      return TtFail(err, TT_INTERNAL, "CalendarValueHistory failed, error " + IntegerToString(GetLastError()));
   string items = "";
   bool firstItem = true;
   for(int i = 0; i < n; i++)
     {
      long t = TtUtcMsOfServerTime(values.v[i].time);
      if(t < from || t >= to)
         continue;
      MqlCalendarEvent ev;
      if(!CalendarEventById(values.v[i].event_id, ev))
         continue;
      MqlCalendarCountry co;
      if(!CalendarCountryById(ev.country_id, co))
         continue;
      if(ArraySize(currencies.v) > 0)
        {
         bool wanted = false;
         for(int k = 0; k < ArraySize(currencies.v); k++)
            if(currencies.v[k] == co.currency)
               wanted = true;
         if(!wanted)
            continue;
        }
      string importance = "low";
      if(ev.importance == CALENDAR_IMPORTANCE_HIGH)
         importance = "high";
      else if(ev.importance == CALENDAR_IMPORTANCE_MODERATE)
         importance = "medium";
      string item = "{" + JKV("id", JStr(IntegerToString((long)values.v[i].id))) + "," + JKV("time", JInt(t)) + "," +
                    JKV("currency", JStr(co.currency)) + "," + JKV("country", JStr(co.code)) + "," +
                    JKV("name", JStr(ev.name)) + "," + JKV("importance", JStr(importance)) + "," +
                    JKV("category", JStr(TtCategoryName(ev.sector)));
      string a = TtCalendarValue(values.v[i].actual_value);
      string f = TtCalendarValue(values.v[i].forecast_value);
      string p = TtCalendarValue(values.v[i].prev_value);
      if(a != "")
         item = item + "," + JKV("actual", a);
      if(f != "")
         item = item + "," + JKV("forecast", f);
      if(p != "")
         item = item + "," + JKV("previous", p);
      if(!firstItem)
         StringAdd(items, ",");
      firstItem = false;
      StringAdd(items, item + "}");
     }
   result = "{\"kind\":\"calendar\",\"events\":[" + items + "]}";
   return true;
  }

//--- trade transactions (OnTradeTransaction) ---------------------------------

// The protocol event of a trade transaction, or "" when it has none.
string TermTransactionEvent(const MqlTradeTransaction &trans, const MqlTradeRequest &request, const MqlTradeResult &result)
  {
   string kind = "";
   string deal = "";
   // A modification is told by its request (TRADE_TRANSACTION_REQUEST carries
   // request and result): ORDER_UPDATE also comes with the order's own state changes.
   if(trans.type == TRADE_TRANSACTION_REQUEST)
     {
      if(request.action != TRADE_ACTION_MODIFY || result.retcode != TRADE_RETCODE_DONE)
         return "";
      return "{\"kind\":\"trade_transaction\",\"transaction\":\"order_modified\",\"order\":" + JInt((long)request.order) + ",\"position\":0}";
     }
   string state = "";
   if(trans.type == TRADE_TRANSACTION_DEAL_ADD)
     {
      kind = "deal_added";
      if(HistoryDealSelect(trans.deal))
         deal = TtDealJson(trans.deal);
     }
   else if(trans.type == TRADE_TRANSACTION_ORDER_ADD || trans.type == TRADE_TRANSACTION_ORDER_DELETE)
     {
      string t = TtOrderTypeName(trans.order_type);
      if(t == "" || t == "BUY" || t == "SELL")
         return "";
      kind = "order_added";
      if(trans.type == TRADE_TRANSACTION_ORDER_DELETE)
        {
         kind = "order_removed";
         state = TtOrderStateName(trans.order_state);
        }
     }
   else if(trans.type == TRADE_TRANSACTION_POSITION)
      kind = "position_modified";
   else
      return "";
   string e = "{\"kind\":\"trade_transaction\",\"transaction\":" + JStr(kind);
   if(deal != "")
      e = e + ",\"deal\":" + deal;
   if(state != "")
      e = e + ",\"order_state\":" + JStr(state);
   return e + ",\"order\":" + JInt((long)trans.order) + ",\"position\":" + JInt((long)trans.position) + "}";
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
      ok = TtCmdTicks(j, c, result, err);
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
   else if(cmd == "calendar")
      ok = TtCmdCalendar(j, c, result, err);
   else if(cmd == "modify_order")
      ok = TtCmdModifyOrder(j, c, result, err);
   else if(cmd == "close_by")
      ok = TtCmdCloseBy(j, c, result, err);
   else if(cmd == "market_book_add")
      ok = TtCmdBookAdd(j, c, result, err);
   else if(cmd == "market_book_get")
      ok = TtCmdBookGet(j, c, result, err);
   else if(cmd == "market_book_release")
      ok = TtCmdBookRelease(j, c, result, err);
   else
      return -1;
   if(ok)
      return 1;
   return 0;
  }

#endif
