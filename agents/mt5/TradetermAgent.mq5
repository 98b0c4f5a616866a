//+------------------------------------------------------------------+
//| TradetermAgent.mq5                                               |
//| tradeterm agent for MetaTrader 5: connects this terminal to a    |
//| tradeterm gateway (agent protocol v1) over WebSocket or HTTP     |
//| long-poll. No DLLs. See agents/mql/README.md.                    |
//+------------------------------------------------------------------+
#ifdef __MQL5__
#property copyright   "tradeterm"
#property link        "https://github.com/tradeterm"
#property version     "1.00"
#property description "tradeterm agent: serves agent protocol v1 to a tradeterm gateway."
#property description "Trading stays off unless inp_AllowTrading is true AND Algo Trading is on."
#endif

enum ENUM_TT_TRANSPORT
  {
   TT_TRANSPORT_WEBSOCKET = 0, // WebSocket (Socket* functions)
   TT_TRANSPORT_LONGPOLL = 1   // HTTP long-poll (WebRequest)
  };

input string            inp_GatewayUrl   = "wss://gateway.example.com/agent/v1"; // Gateway URL (wss://, ws://, https://, http://)
input string            inp_TerminalKey  = "";                                   // Terminal key (tt_term_...)
input bool              inp_AllowTrading = false;                                // Allow trading (live orders)
input ENUM_TT_TRANSPORT inp_Transport    = TT_TRANSPORT_WEBSOCKET;               // Transport
input long              inp_Magic        = 0;                                    // Magic number for orders without one
input int               inp_Deviation    = 10;                                   // Default deviation (points)
input string            inp_Symbols      = "";                                   // Symbols to stream (comma-separated; empty = chart symbol)
input int               inp_TimerMs      = 50;                                   // Timer period (ms)

#include <Tradeterm/Platform.mqh>
#include <Tradeterm/Json.mqh>
#include <Tradeterm/Protocol.mqh>
#include "Terminal5.mqh"
#include "Transport5.mqh"
#include <Tradeterm/Agent.mqh>

TtAgent g_ttAgent;

int OnInit(void)
  {
   g_ttMagic = inp_Magic;
   g_ttDeviation = inp_Deviation;
   g_ttUsePoll = inp_Transport == TT_TRANSPORT_LONGPOLL;
   string symbols = inp_Symbols;
   if(TtTrim(symbols) == "")
      symbols = _Symbol;
   MathSrand((uint)GetTickCount());
   g_ttAgent.Configure(inp_GatewayUrl, inp_TerminalKey, inp_AllowTrading, symbols, "tradeterm-agent-mql5");
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
   g_ttAgent.OnTimer();
  }

void OnTick(void)
  {
  }

void OnTradeTransaction(const MqlTradeTransaction &trans, const MqlTradeRequest &request, const MqlTradeResult &result)
  {
   string e = TermTransactionEvent(trans, request, result);
   if(e != "")
      g_ttAgent.QueueEvent(e);
  }
