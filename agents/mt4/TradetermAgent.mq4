//+------------------------------------------------------------------+
//| TradetermAgent.mq4                                               |
//| tradeterm agent for MetaTrader 4: connects this terminal to a    |
//| tradeterm gateway (agent protocol v1) over the HTTP long-poll    |
//| binding with WebRequest (MQL4 has no sockets without DLLs).      |
//| No DLLs. See agents/mql/README.md.                               |
//+------------------------------------------------------------------+
#ifdef __MQL4__
#property copyright   "tradeterm"
#property link        "https://github.com/tradeterm"
#property version     "1.00"
#property strict
#property description "tradeterm agent: serves agent protocol v1 to a tradeterm gateway (long-poll)."
#property description "Trading stays off unless inp_AllowTrading is true AND AutoTrading is on."
#endif

input string inp_GatewayUrl   = "https://gateway.example.com"; // Gateway URL (https:// or http://; add it under Tools > Options > Expert Advisors)
input string inp_TerminalKey  = "";                            // Terminal key (tt_term_...)
input bool   inp_AllowTrading = false;                         // Allow trading (live orders)
input int    inp_Magic        = 0;                             // Magic number for orders without one
input int    inp_Deviation    = 10;                            // Default slippage (points)
input string inp_Symbols      = "";                            // Symbols to stream (comma-separated; empty = chart symbol)
input int    inp_TimerMs      = 50;                            // Timer period (ms)

#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>
#include <Tradeterm/LongPoll.mqh>
#include "Terminal4.mqh"

#define TT_POLL_TIMEOUT_MS 3000

TtLongPoll   g_ttPoll;
TtTradeWatch g_ttWatch;

bool   TransportIsPoll(void) { return true; }
string TransportName(void) { return "long-poll"; }
string TransportError(void) { return g_ttPoll.error; }
bool   TransportConnect(const string url, const string hello, TtStrings &inbox) { return g_ttPoll.Open(url, hello, inbox, TT_POLL_TIMEOUT_MS); }
bool   TransportPump(TtStrings &outbox, TtStrings &inbox, const int waitMs) { return g_ttPoll.Exchange(outbox, inbox, waitMs, TT_POLL_TIMEOUT_MS); }
void   TransportClose(void) { g_ttPoll.Close(TT_POLL_TIMEOUT_MS); }

#include <Tradeterm/Agent.mqh>

TtAgent g_ttAgent;

int OnInit(void)
  {
   g_ttMagic = inp_Magic;
   g_ttDeviation = inp_Deviation;
   string symbols = inp_Symbols;
   if(TtTrim(symbols) == "")
      symbols = _Symbol;
   MathSrand((uint)GetTickCount());
   g_ttAgent.Configure(inp_GatewayUrl, inp_TerminalKey, inp_AllowTrading, symbols, "tradeterm-agent-mql4");
   int period = inp_TimerMs;
   if(period < 10)
      period = 10;
   if(!EventSetMillisecondTimer(period))
      return INIT_FAILED;
   g_ttAgent.OnTimer();
   return INIT_SUCCEEDED;
  }

void OnDeinit(const int reason)
  {
   EventKillTimer();
   g_ttAgent.Shutdown();
   Comment("");
  }

void OnTimer(void)
  {
   if(g_ttAgent.IsConnected())
     {
      TtStrings events;
      g_ttWatch.Poll(events);
      for(int i = 0; i < ArraySize(events.v); i++)
         g_ttAgent.QueueEvent(events.v[i]);
     }
   g_ttAgent.OnTimer();
  }

void OnTick(void)
  {
  }
