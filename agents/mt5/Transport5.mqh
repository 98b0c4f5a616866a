//+------------------------------------------------------------------+
//| Transport5.mqh                                                   |
//| The MT5 expert's two transports behind the functions Agent.mqh   |
//| calls: WebSocket over the native Socket* functions (default), or |
//| the HTTP long-poll binding over WebRequest.                      |
//+------------------------------------------------------------------+
#ifndef TRADETERM_TRANSPORT5_MQH
#define TRADETERM_TRANSPORT5_MQH

#include <Tradeterm/Platform.mqh>
#include <Tradeterm/WebSocket.mqh>
#include <Tradeterm/LongPoll.mqh>

#define TT_CONNECT_TIMEOUT_MS 1500
#define TT_POLL_TIMEOUT_MS    3000

TtWebSocket g_ttWs;
TtLongPoll  g_ttPoll;
bool        g_ttUsePoll = false;
string      g_ttTransportError = "";

bool TransportIsPoll(void) { return g_ttUsePoll; }

string TransportName(void)
  {
   if(g_ttUsePoll)
      return "long-poll";
   return "websocket";
  }

string TransportError(void)
  {
   if(g_ttUsePoll)
      return g_ttPoll.error;
   if(g_ttWs.error != "")
      return g_ttWs.error;
   return g_ttTransportError;
  }

// Opens the connection and sends `hello` (WebSocket) or opens a session
// with it (long-poll: the welcome lands in `inbox`).
bool TransportConnect(const string url, const string hello, TtStrings &inbox)
  {
   if(g_ttUsePoll)
      return g_ttPoll.Open(url, hello, inbox, TT_POLL_TIMEOUT_MS);
   if(!g_ttWs.Connect(url, TT_CONNECT_TIMEOUT_MS))
      return false;
   if(!g_ttWs.SendText(hello))
      return false;
   // The welcome usually arrives at once; pick it up if it did.
   return g_ttWs.Poll(inbox);
  }

// Sends `outbox` (emptied) and appends what arrived to `inbox`. False when
// the connection is gone.
bool TransportPump(TtStrings &outbox, TtStrings &inbox, const int waitMs)
  {
   if(g_ttUsePoll)
      return g_ttPoll.Exchange(outbox, inbox, waitMs, TT_POLL_TIMEOUT_MS);
   for(int i = 0; i < ArraySize(outbox.v); i++)
      if(!g_ttWs.SendText(outbox.v[i]))
        {
         ArrayResize(outbox.v, 0);
         return false;
        }
   ArrayResize(outbox.v, 0);
   return g_ttWs.Poll(inbox);
  }

void TransportClose(void)
  {
   if(g_ttUsePoll)
      g_ttPoll.Close(TT_POLL_TIMEOUT_MS);
   else
      g_ttWs.Shutdown();
  }

#endif
