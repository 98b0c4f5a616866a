//+------------------------------------------------------------------+
//| Tradeterm/LongPoll.mqh                                           |
//| The HTTP long-poll binding of agent protocol v1 over WebRequest  |
//| (MT4 and MT5). Same JSON frames as the WebSocket transport:      |
//|   POST {base}/open  hello -> welcome + session                   |
//|   POST {base}       {seq, ack, wait_ms, frames} -> {ack, frames} |
//|   POST {base}/close                                              |
//| A batch whose reply was lost is re-sent with the same seq and    |
//| the same frames; a gateway frame is handed on only if its seq is |
//| above the highest one already handed on (never executed twice).  |
//+------------------------------------------------------------------+
#ifndef TRADETERM_LONGPOLL_MQH
#define TRADETERM_LONGPOLL_MQH

#include "Platform.mqh"
#include "Json.mqh"
#include "Url.mqh"

#define TT_POLL_MAX_FAILURES 3

class TtLongPoll
  {
public:
   string            m_base;      // http(s)://host:port/agent/v1/poll
   string            m_session;   // secret: never printed
   bool              m_open;
   long              m_seq;       // seq of the current batch
   long              m_ack;       // highest gateway frame seq handed on
   TtStrings         m_batch;     // frames of the current batch
   bool              m_pending;   // current batch not yet confirmed
   int               m_failures;
   string            error;
   int               lastStatus;
   int               lastErrorCode;

                     TtLongPoll(void) { m_open = false; m_seq = 0; m_ack = 0; m_pending = false; m_failures = 0; lastStatus = 0; lastErrorCode = 0; }

   bool              IsOpen(void) { return m_open; }

   // Opens a session with `hello`. On success the welcome object is
   // appended to `inbox`; on a refusal the gateway's error object is.
   bool              Open(const string url, const string hello, TtStrings &inbox, const int timeoutMs)
     {
      m_open = false;
      m_session = "";
      m_seq = 0;
      m_ack = 0;
      m_pending = false;
      m_failures = 0;
      ArrayResize(m_batch.v, 0);
      TtUrl u;
      if(!u.Parse(url))
        {
         error = u.error;
         return false;
        }
      m_base = u.PollBase();
      string body;
      int status = Post(m_base + "/open", "", hello, timeoutMs, body);
      if(status < 0)
         return false;
      TtJson j;
      if(!j.Parse(body) || !j.IsObject(0))
        {
         error = "HTTP " + IntegerToString(status) + " from " + m_base + "/open with a body that is not JSON";
         return false;
        }
      if(status != 200)
        {
         error = "HTTP " + IntegerToString(status) + ": " + j.GetStr(0, "code", "") + " " + j.GetStr(0, "message", "");
         Push(inbox, body);
         return false;
        }
      m_session = j.GetStr(0, "session", "");
      if(m_session == "")
        {
         error = "the welcome has no session";
         return false;
        }
      m_open = true;
      Push(inbox, body);
      return true;
     }

   // One exchange: sends the current batch (taking `outbox` into a new
   // batch when the previous one was confirmed) and appends new gateway
   // frames to `inbox`. Returns false when the session is gone.
   bool              Exchange(TtStrings &outbox, TtStrings &inbox, const int waitMs, const int timeoutMs)
     {
      if(!m_open)
         return false;
      if(!m_pending)
        {
         int k = ArraySize(outbox.v);
         ArrayResize(m_batch.v, k);
         for(int i = 0; i < k; i++)
            m_batch.v[i] = outbox.v[i];
         ArrayResize(outbox.v, 0);
         m_seq++;
         m_pending = true;
        }
      string req = "{\"seq\":" + JInt(m_seq) + ",\"ack\":" + JInt(m_ack) + ",\"wait_ms\":" + IntegerToString(waitMs) + ",\"frames\":[";
      int nb = ArraySize(m_batch.v);
      for(int i = 0; i < nb; i++)
        {
         if(i > 0)
            StringAdd(req, ",");
         StringAdd(req, m_batch.v[i]);
        }
      StringAdd(req, "]}");
      string body;
      int status = Post(m_base, "X-Agent-Session: " + m_session + "\r\n", req, waitMs + timeoutMs, body);
      if(status == 401 || status == 404)
        {
         error = "session ended (HTTP " + IntegerToString(status) + ")";
         TtJson e;
         if(e.Parse(body) && e.IsObject(0))
            error = error + ": " + e.GetStr(0, "code", "") + " " + e.GetStr(0, "message", "");
         if(status == 401)
            Push(inbox, body);
         m_open = false;
         return false;
        }
      if(status == 400)
        {
         // The gateway processed nothing: drop the batch rather than loop on it.
         error = "the gateway refused a batch: " + body;
         m_pending = false;
         return true;
        }
      if(status != 200)
        {
         // Lost or failed: keep the batch and its seq for the retry. After
         // three failures in a row give up the session (the agent backs off
         // and opens a new one) rather than block every timer tick.
         m_failures++;
         if(status > 0)
            error = "HTTP " + IntegerToString(status) + " from the gateway";
         if(m_failures >= TT_POLL_MAX_FAILURES)
           {
            m_open = false;
            return false;
           }
         return true;
        }
      TtJson j;
      if(!j.Parse(body) || !j.IsObject(0))
        {
         m_failures++;
         error = "the gateway's batch is not JSON: " + j.error;
         return true;
        }
      m_failures = 0;
      m_pending = false;
      int frames = j.Get(0, "frames");
      for(int f = j.FirstChild(frames); f >= 0; f = j.NextSibling(f))
        {
         long seq = j.GetLong(f, "seq", 0);
         if(seq <= m_ack)
            continue;
         m_ack = seq;
         Push(inbox, j.Serialize(f));
        }
      return true;
     }

   // Ends the session (best effort).
   void              Close(const int timeoutMs)
     {
      if(m_open && m_session != "")
        {
         string body;
         Post(m_base + "/close", "X-Agent-Session: " + m_session + "\r\n", "{}", timeoutMs, body);
        }
      m_open = false;
      m_session = "";
     }

   // Frames of the current batch not yet confirmed by the gateway.
   bool              HasUnconfirmed(void) { return m_pending && ArraySize(m_batch.v) > 0; }

private:
   void              Push(TtStrings &inbox, const string frame)
     {
      int k = ArraySize(inbox.v);
      ArrayResize(inbox.v, k + 1, 16);
      inbox.v[k] = frame;
     }

   // POSTs JSON; returns the HTTP status, or -1 (error says why).
   int               Post(const string url, const string headers, const string json, const int timeoutMs, string &body)
     {
      TtChars data;
      int n = StringToCharArray(json, data.v, 0, WHOLE_ARRAY, CP_UTF8) - 1;
      if(n < 0)
         n = 0;
      ArrayResize(data.v, n);
      TtChars result;
      string resultHeaders;
      ResetLastError();
      int status = WebRequest("POST", url, "Content-Type: application/json\r\n" + headers, timeoutMs, data.v, result.v, resultHeaders);
      lastStatus = status;
      if(status < 0)
        {
         lastErrorCode = GetLastError();
         error = "WebRequest to " + url + " failed, error " + IntegerToString(lastErrorCode);
         if(lastErrorCode == 4014 || lastErrorCode == 4060)
            error = error + " (allow the gateway URL under Tools > Options > Expert Advisors)";
         body = "";
         return -1;
        }
      body = CharArrayToString(result.v, 0, ArraySize(result.v), CP_UTF8);
      return status;
     }
  };

#endif
