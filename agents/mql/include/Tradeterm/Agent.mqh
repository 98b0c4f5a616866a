//+------------------------------------------------------------------+
//| Tradeterm/Agent.mqh                                              |
//| The agent core shared by the MT4 and MT5 experts: connection     |
//| state machine (hello -> welcome, backoff 100 ms doubling to 10 s |
//| with jitter), request dispatch, the trading switch check, the    |
//| idempotency store, tick/account/permission events and the chart  |
//| status line. Everything is driven by OnTimer: no call waits long.|
//|                                                                  |
//| Before including this file the expert defines                    |
//|  - the terminal adapter (Terminal5.mqh / Terminal4.mqh):         |
//|    TermPlatform, TermBuild, TermUid, TermLogin,                  |
//|    TermAccountIdentity, TermAutomatedTrading, TermTradeBlock,    |
//|    TermAccountInfoJson,                                          |
//|    TermAccountNumbers, TermQuote, TermExecute;                   |
//|  - the transport: TransportConnect, TransportPump,               |
//|    TransportClose, TransportError, TransportName, TransportIsPoll|
//+------------------------------------------------------------------+
#ifndef TRADETERM_AGENT_MQH
#define TRADETERM_AGENT_MQH

#include "Platform.mqh"
#include "Json.mqh"
#include "Protocol.mqh"

#define TT_ST_IDLE      0
#define TT_ST_HANDSHAKE 1
#define TT_ST_CONNECTED 2

#define TT_IDEM_KEY_MAX 256
#define TT_IDEM_KEEP    2000
#define TT_MAX_RESULT   (16 * 1024 * 1024 - 4096)  // bytes of UTF-8

//+------------------------------------------------------------------+
//| Idempotency keys and their first outcome, kept in a text file in |
//| the terminal's Files folder so that a reconnect or a restart     |
//| never executes a keyed trade twice. One line per record:         |
//|   <scope:key as JSON string> TAB <fingerprint> TAB <outcome>     |
//| outcome: P (started, outcome unknown), R<result>, E<error>,      |
//| X (forgotten: failed before reaching the trade server).          |
//| The file is named after the terminal key (a hash of it), known   |
//| in OnInit, not after ACCOUNT_LOGIN (0 until the account is       |
//| authorised); trading is refused while the file cannot be read.   |
//+------------------------------------------------------------------+
class TtIdem
  {
public:
   TtStrings         m_keys;
   TtStrings         m_fps;
   TtStrings         m_outcomes;
   int               m_n;
   string            m_file;
   bool              ready;     // the file was read (or does not exist yet)
   string            m_lastMsg;

                     TtIdem(void) { m_n = 0; m_file = ""; ready = false; m_lastMsg = ""; }

   // Reads the store from `file` (the records written before a restart).
   bool              Load(const string file)
     {
      m_file = file;
      m_n = 0;
      ArrayResize(m_keys.v, 0);
      ArrayResize(m_fps.v, 0);
      ArrayResize(m_outcomes.v, 0);
      ready = Merge(file);
      return ready;
     }

   // Adds the records of `file` (true when read or absent).
   bool              Merge(const string file)
     {
      if(!FileIsExist(file))
         return true;
      ResetLastError();
      int h = FileOpen(file, FILE_READ | FILE_TXT | FILE_ANSI | FILE_SHARE_READ, '\t', CP_UTF8);
      if(h == INVALID_HANDLE)
        {
         string msg = "tradeterm: cannot read " + file + ", error " + IntegerToString(GetLastError());
         if(msg != m_lastMsg)
            Print(msg);
         m_lastMsg = msg;
         return false;
        }
      int lines = 0;
      while(!FileIsEnding(h))
        {
         string line = FileReadString(h);
         int t1 = StringFind(line, "\t");
         if(t1 < 0)
            continue;
         int t2 = StringFind(line, "\t", t1 + 1);
         if(t2 < 0)
            continue;
         TtJson k;
         if(!k.Parse(StringSubstr(line, 0, t1)) || k.Type(0) != TT_JSTR)
            continue;
         Set(k.Str(0), StringSubstr(line, t1 + 1, t2 - t1 - 1), StringSubstr(line, t2 + 1));
         lines++;
        }
      FileClose(h);
      if(lines > 2 * TT_IDEM_KEEP && file == m_file)
         Rewrite();
      return true;
     }

   int               Find(const string key)
     {
      for(int i = m_n - 1; i >= 0; i--)
         if(m_keys.v[i] == key)
            return i;
      return -1;
     }

   // Records an outcome in memory and appends it to the file.
   void              Put(const string key, const string fp, const string outcome)
     {
      Set(key, fp, outcome);
      if(m_file == "")
         return;
      int h = FileOpen(m_file, FILE_READ | FILE_WRITE | FILE_TXT | FILE_ANSI | FILE_SHARE_READ, '\t', CP_UTF8);
      if(h == INVALID_HANDLE)
        {
         Print("tradeterm: cannot write " + m_file + ", error " + IntegerToString(GetLastError()));
         return;
        }
      FileSeek(h, 0, SEEK_END);
      FileWriteString(h, JStr(key) + "\t" + fp + "\t" + outcome + "\r\n");
      FileFlush(h);
      FileClose(h);
     }

private:
   void              Set(const string key, const string fp, const string outcome)
     {
      int i = Find(key);
      if(i < 0)
        {
         i = m_n;
         m_n++;
         ArrayResize(m_keys.v, m_n, 256);
         ArrayResize(m_fps.v, m_n, 256);
         ArrayResize(m_outcomes.v, m_n, 256);
         m_keys.v[i] = key;
        }
      m_fps.v[i] = fp;
      m_outcomes.v[i] = outcome;
     }

   // Keeps the newest TT_IDEM_KEEP records.
   void              Rewrite(void)
     {
      int from = 0;
      if(m_n > TT_IDEM_KEEP)
         from = m_n - TT_IDEM_KEEP;
      int h = FileOpen(m_file, FILE_WRITE | FILE_TXT | FILE_ANSI, '\t', CP_UTF8);
      if(h == INVALID_HANDLE)
         return;
      for(int i = from; i < m_n; i++)
         FileWriteString(h, JStr(m_keys.v[i]) + "\t" + m_fps.v[i] + "\t" + m_outcomes.v[i] + "\r\n");
      FileClose(h);
     }
  };

//+------------------------------------------------------------------+
//| The agent.                                                       |
//+------------------------------------------------------------------+
class TtAgent
  {
public:
   // configuration (from the expert's inputs)
   string            m_url;
   string            m_key;        // secret: never printed
   bool              m_allowTrading;
   TtStrings         m_symbols;
   string            m_agentName;
   int               m_pollWaitMs;
   // state
   int               m_state;
   string            m_terminalId;
   string            m_lastError;
   string            m_lastPrinted;
   uint              m_lastAttempt;
   int               m_backoff;
   int               m_wait;
   uint              m_handshakeStart;
   uint              m_lastRecv;
   uint              m_lastPing;
   long              m_hbInterval;
   long              m_hbTimeout;
   TtStrings         m_outbox;
   TtStrings         m_inbox;
   TtIdem            m_idem;
   bool              m_legacyMerged; // the store of agent 1.0.0 (named after the login) was read
   int               m_requests;
   // streaming
   TtDoubles         m_sentBid;
   TtDoubles         m_sentAsk;
   TtLongs           m_sentTime;
   TtLongs           m_sentAt;     // GetTickCount of the last push (as long)
   uint              m_lastAccountCheck;
   double            m_sentBalance;
   double            m_sentEquity;
   double            m_sentMargin;
   int               m_sentAllow;
   int               m_sentAuto;

                     TtAgent(void)
     {
      m_state = TT_ST_IDLE;
      m_backoff = 0;
      m_wait = 0;
      m_lastAttempt = 0;
      m_hbInterval = 10000;
      m_hbTimeout = 30000;
      m_pollWaitMs = 200;
      m_requests = 0;
      m_allowTrading = false;
      m_sentAllow = -1;
      m_sentAuto = -1;
      m_legacyMerged = false;
      m_agentName = "tradeterm-agent-mql";
     }

   // Sets the inputs. `symbols` is a comma-separated list.
   void              Configure(const string url, const string key, const bool allowTrading, const string symbols, const string agentName)
     {
      m_url = TtTrim(url);
      m_key = TtTrim(key);
      m_allowTrading = allowTrading;
      m_agentName = agentName;
      int n = TtSplitList(symbols, m_symbols);
      ArrayResize(m_sentBid.v, n);
      ArrayResize(m_sentAsk.v, n);
      ArrayResize(m_sentTime.v, n);
      ArrayResize(m_sentAt.v, n);
      for(int i = 0; i < n; i++)
        {
         m_sentBid.v[i] = 0;
         m_sentAsk.v[i] = 0;
         m_sentTime.v[i] = 0;
         m_sentAt.v[i] = 0;
        }
      m_legacyMerged = false;
      if(m_key != "")
         m_idem.Load(IdemFile());
     }

   // The idempotency file of this terminal key: stable from OnInit on
   // (ACCOUNT_LOGIN can still be 0 then).
   string            IdemFile(void)
     {
      return "tradeterm_idempotency_" + StringSubstr(TtSha256Hex(m_key), 0, 16) + ".txt";
     }

   bool              IsConnected(void) { return m_state == TT_ST_CONNECTED; }
   bool              TradingEnabled(void) { return TradingBlock() == ""; }

   // Why trade commands are refused, "" when they are not.
   string            TradingBlock(void)
     {
      if(!m_allowTrading && !TermAutomatedTrading())
         return "the agent's allow-trading input and the terminal's automated trading are both off (" + TermTradeBlock() + ")";
      if(!m_allowTrading)
         return "the agent's allow-trading input (inp_AllowTrading) is off";
      string block = TermTradeBlock();
      if(block != "")
         return block;
      if(!m_idem.ready)
         return "the idempotency file " + IdemFile() + " cannot be read yet";
      return "";
     }

   // One timer tick: connect when due, exchange frames, push events.
   void              OnTimer(void)
     {
      uint now = GetTickCount();
      if(!m_idem.ready && m_key != "")
         m_idem.Load(IdemFile());
      if(m_state == TT_ST_IDLE)
        {
         if(m_url == "" || m_key == "")
           {
            m_lastError = "set the gateway URL and the terminal key in the inputs";
            UpdateComment();
            return;
           }
         // The hello carries the account: wait until the terminal is logged
         // in (ACCOUNT_LOGIN is 0 before the account is authorised).
         if(TermLogin() == 0)
           {
            m_lastError = "waiting for the trade account to log in";
            UpdateComment();
            return;
           }
         MergeLegacyIdem();
         if(m_lastAttempt == 0 || now - m_lastAttempt >= (uint)m_wait)
            Connect();
         UpdateComment();
         return;
        }
      if(m_state == TT_ST_CONNECTED)
        {
         PushPermissions();
         PushTicks();
         PushAccount();
         if(!TransportIsPoll() && (long)(now - m_lastPing) >= m_hbInterval)
           {
            m_lastPing = now;
            Send("{\"type\":\"ping\",\"ts\":" + JInt(TtNowMs()) + "}");
           }
        }
      int wait = 0;
      if(TransportIsPoll() && m_state == TT_ST_CONNECTED && ArraySize(m_outbox.v) == 0)
         wait = m_pollWaitMs;
      for(int pass = 0; pass < 4; pass++)
        {
         int before = ArraySize(m_inbox.v);
         if(!TransportPump(m_outbox, m_inbox, wait))
           {
            ProcessInbox();
            Disconnected(TransportError());
            return;
           }
         if(ArraySize(m_inbox.v) > before)
            m_lastRecv = GetTickCount();
         ProcessInbox();
         if(m_state == TT_ST_IDLE)
            return;
         if(ArraySize(m_outbox.v) == 0)
            break;
         wait = 0;
        }
      now = GetTickCount();
      if(m_state == TT_ST_HANDSHAKE && now - m_handshakeStart > 10000)
         Disconnected("no welcome from the gateway within 10 s");
      else if(m_state == TT_ST_CONNECTED && (long)(now - m_lastRecv) > m_hbTimeout)
         Disconnected("the gateway was silent for " + IntegerToString(m_hbTimeout) + " ms");
      UpdateComment();
     }

   // Queues an event (dropped while not connected).
   void              QueueEvent(const string eventJson)
     {
      if(m_state == TT_ST_CONNECTED)
         Send(TtEventFrame(eventJson));
     }

   void              Shutdown(void)
     {
      if(m_state != TT_ST_IDLE)
        {
         if(ArraySize(m_outbox.v) > 0)
            TransportPump(m_outbox, m_inbox, 0);
         TransportClose();
        }
      m_state = TT_ST_IDLE;
     }

   string            StatusLine(void)
     {
      string trading = "trading ON";
      string block = TradingBlock();
      if(!m_allowTrading)
         trading = "trading OFF (inp_AllowTrading is false)";
      else if(block != "")
         trading = "trading OFF (" + block + ")";
      string s = "tradeterm agent ";
      s = s + TT_AGENT_VERSION + " | " + TransportName() + " | ";
      if(m_state == TT_ST_CONNECTED)
         s = s + "connected | terminal " + m_terminalId;
      else if(m_state == TT_ST_HANDSHAKE)
         s = s + "connecting";
      else
        {
         s = s + "disconnected";
         if(m_lastError != "")
            s = s + ": " + m_lastError;
        }
      return s + " | " + trading + " | requests " + IntegerToString(m_requests);
     }

private:
   // Keys recorded by agent 1.0.0 lived in a file named after the login:
   // read them too once the login is known.
   void              MergeLegacyIdem(void)
     {
      if(m_legacyMerged || !m_idem.ready)
         return;
      m_legacyMerged = true;
      m_idem.Merge("tradeterm_idempotency_" + IntegerToString(TermLogin()) + ".txt");
     }

   void              UpdateComment(void)
     {
      Comment(StatusLine());
     }

   void              Log(const string s)
     {
      if(s == m_lastPrinted)
         return;
      m_lastPrinted = s;
      Print("tradeterm: " + s);
     }

   void              Send(const string frame)
     {
      int k = ArraySize(m_outbox.v);
      ArrayResize(m_outbox.v, k + 1, 64);
      m_outbox.v[k] = frame;
     }

   string            Hello(void)
     {
      bool automated = TermAutomatedTrading();
      m_sentAllow = 0;
      if(m_allowTrading)
         m_sentAllow = 1;
      m_sentAuto = 0;
      if(automated)
         m_sentAuto = 1;
      return "{\"type\":\"hello\",\"protocol_version\":" + IntegerToString(TT_PROTOCOL_VERSION) +
             ",\"terminal_key\":" + JStr(m_key) +
             ",\"terminal\":{\"uid\":" + JStr(TermUid()) + ",\"platform\":" + JStr(TermPlatform()) + ",\"build\":" + JInt(TermBuild()) + "}" +
             ",\"account\":" + TermAccountIdentity() +
             ",\"permissions\":{\"allow_trading\":" + JBool(m_allowTrading) + ",\"automated_trading\":" + JBool(automated) + "}" +
             ",\"agent\":{\"name\":" + JStr(m_agentName) + ",\"version\":" + JStr(TT_AGENT_VERSION) + "}}";
     }

   void              Connect(void)
     {
      m_lastAttempt = GetTickCount();
      if(m_lastAttempt == 0)
         m_lastAttempt = 1;
      ArrayResize(m_outbox.v, 0);
      ArrayResize(m_inbox.v, 0);
      bool ok = TransportConnect(m_url, Hello(), m_inbox);
      m_state = TT_ST_HANDSHAKE;
      m_handshakeStart = GetTickCount();
      m_lastRecv = m_handshakeStart;
      ProcessInbox();
      if(!ok && m_state != TT_ST_IDLE)
         Disconnected(TransportError());
     }

   void              Disconnected(const string reason)
     {
      if(m_state != TT_ST_IDLE)
         TransportClose();
      m_state = TT_ST_IDLE;
      if(reason != "")
         m_lastError = reason;
      ArrayResize(m_outbox.v, 0);
      ArrayResize(m_inbox.v, 0);
      if(m_backoff == 0)
         m_backoff = 100;
      else
         m_backoff = (int)MathMin(m_backoff * 2, 10000);
      m_wait = m_backoff / 2 + MathRand() % (m_backoff / 2 + 1);
      m_lastAttempt = GetTickCount();
      if(m_lastAttempt == 0)
         m_lastAttempt = 1;
      Log("disconnected: " + m_lastError + "; reconnecting in " + IntegerToString(m_wait) + " ms");
      UpdateComment();
     }

   void              ProcessInbox(void)
     {
      int n = ArraySize(m_inbox.v);
      if(n == 0)
         return;
      for(int i = 0; i < n; i++)
        {
         string frame = m_inbox.v[i];
         m_inbox.v[i] = "";
         HandleFrame(frame);
         if(m_state == TT_ST_IDLE)
            break;
        }
      ArrayResize(m_inbox.v, 0);
     }

   void              HandleFrame(const string text)
     {
      TtJson j;
      if(!j.Parse(text) || !j.IsObject(0))
        {
         Log("ignored a frame that is not a JSON object: " + j.error);
         return;
        }
      string type = j.GetStr(0, "type", "");
      if(type == "request")
         HandleRequest(j);
      else if(type == "ping")
         Send("{\"type\":\"pong\",\"ts\":" + j.Serialize(j.Get(0, "ts")) + "}");
      else if(type == "pong")
        {
        }
      else if(type == "welcome")
        {
         if(m_state != TT_ST_HANDSHAKE)
            return;
         m_terminalId = j.GetStr(0, "terminal_id", "");
         m_hbInterval = j.GetLong(0, "heartbeat_interval_ms", 10000);
         m_hbTimeout = j.GetLong(0, "heartbeat_timeout_ms", 30000);
         if(m_hbInterval < 1000)
            m_hbInterval = 1000;
         if(m_hbTimeout < 3000)
            m_hbTimeout = 3000;
         m_state = TT_ST_CONNECTED;
         m_backoff = 0;
         m_lastError = "";
         m_lastPing = GetTickCount();
         m_lastRecv = m_lastPing;
         m_lastAccountCheck = 0;
         m_sentBalance = -1;
         for(int i = 0; i < ArraySize(m_sentAt.v); i++)
           {
            m_sentAt.v[i] = 0;
            m_sentTime.v[i] = 0;
           }
         Log("connected as " + m_terminalId + " over " + TransportName());
        }
      else if(type == "error")
        {
         string code = j.GetStr(0, "code", "");
         string message = j.GetStr(0, "message", "");
         if(!j.Has(0, "id") && (m_state == TT_ST_HANDSHAKE || code == TT_AUTH_FAILED))
           {
            if(code == TT_AUTH_FAILED)
               message = message + " (check inp_TerminalKey; a key is bound to the first terminal that used it)";
            Disconnected(code + ": " + message);
            return;
           }
         Log("gateway error " + code + ": " + message);
        }
      else
         Log("ignored a frame of unknown type `" + type + "`");
     }

   void              HandleRequest(TtJson &j)
     {
      string id = j.GetStr(0, "id", "");
      if(id == "")
         return;
      m_requests++;
      int cmdNode = j.Get(0, "command");
      TtErr err;
      string result = "";
      bool ok = false;
      string cmd = j.GetStr(cmdNode, "cmd", "");
      if(!j.IsObject(cmdNode) || cmd == "")
         ok = TtFail(err, TT_UNKNOWN_COMMAND, "the request has no command `cmd`");
      else if(TtIsTradeCommand(cmd) && !TradingEnabled())
         ok = TtFail(err, TT_TRADING_DISABLED, "live trading is disabled on this terminal: " + TradingBlock());
      else if(TtIsIdempotentCommand(cmd))
         ok = ExecuteOnce(j, cmdNode, cmd, result, err);
      else
         ok = Execute(j, cmdNode, cmd, result, err);
      if(ok && TtUtf8Len(result) > TT_MAX_RESULT)
        {
         // The gateway closes a connection on frames over 16 MiB.
         result = "";
         ok = TtFail(err, TT_INVALID_ARGUMENT, "the result is larger than 16 MiB; narrow the range (or use `limit`/`count`)");
        }
      if(ok)
         Send(TtResponseOk(id, result));
      else
         Send(TtResponseErr(id, err));
     }

   bool              Execute(TtJson &j, const int cmdNode, const string cmd, string &result, TtErr &err)
     {
      int rc = TermExecute(j, cmdNode, cmd, result, err);
      if(rc < 0)
         return TtFail(err, TT_UNKNOWN_COMMAND, "this agent does not implement `" + cmd + "`");
#ifdef TT_HARNESS_BREAK
      // Harness builds only (never defined in MetaEditor): one command
      // deliberately answers a well-formed result of the wrong kind, to prove
      // that the conformance kit notices and names it.
      if(cmd == TT_HARNESS_BREAK && rc > 0)
         result = "{\"kind\":\"symbols\",\"symbols\":[]}";
#endif
      return rc > 0;
     }

   // Runs a keyed trade command at most once per key (scope = command).
   bool              ExecuteOnce(TtJson &j, const int cmdNode, const string cmd, string &result, TtErr &err)
     {
      string key = "";
      if(cmd == "place_order")
         key = j.GetStr(j.Get(cmdNode, "order"), "idempotency_key", "");
      else
         key = j.GetStr(cmdNode, "idempotency_key", "");
      if(key == "")
        {
         if(j.Has(cmdNode, "idempotency_key") || j.Has(j.Get(cmdNode, "order"), "idempotency_key"))
            return TtFail(err, TT_INVALID_ARGUMENT, "idempotency_key must be 1 to 256 bytes long");
         return Execute(j, cmdNode, cmd, result, err);
        }
      if(TtUtf8Len(key) > TT_IDEM_KEY_MAX)
         return TtFail(err, TT_INVALID_ARGUMENT, "idempotency_key must be 1 to 256 bytes long");
      string full = cmd + ":" + key;
      string fp = j.Serialize(cmdNode);
      int i = m_idem.Find(full);
      if(i >= 0 && m_idem.m_outcomes.v[i] != "X")
        {
         if(m_idem.m_fps.v[i] != fp)
            return TtFail(err, TT_INVALID_ARGUMENT, "idempotency_key `" + key + "` was already used for a different request");
         string outcome = m_idem.m_outcomes.v[i];
         string kind = StringSubstr(outcome, 0, 1);
         if(kind == "R")
           {
            result = StringSubstr(outcome, 1);
            return true;
           }
         if(kind == "E")
           {
            TtJson e;
            if(e.Parse(StringSubstr(outcome, 1)) && e.IsObject(0))
              {
               err.code = e.GetStr(0, "code", TT_TRADE_REJECTED);
               err.message = e.GetStr(0, "message", "");
               err.retcode = e.GetStr(0, "retcode", "");
               return false;
              }
           }
         return TtFail(err, TT_INTERNAL, "a request with idempotency_key `" + key +
                       "` was started before the terminal stopped and its outcome is unknown; check positions and orders");
        }
      m_idem.Put(full, fp, "P");
      bool ok = Execute(j, cmdNode, cmd, result, err);
      if(ok)
         m_idem.Put(full, fp, "R" + result);
      else if(err.code == TT_TRADE_REJECTED)
         m_idem.Put(full, fp, "E" + TtErrJson(err));
      else
         m_idem.Put(full, fp, "X");
      return ok;
     }

   void              PushPermissions(void)
     {
      int allow = 0;
      if(m_allowTrading)
         allow = 1;
      int automated = 0;
      if(TermAutomatedTrading())
         automated = 1;
      if(allow == m_sentAllow && automated == m_sentAuto)
         return;
      m_sentAllow = allow;
      m_sentAuto = automated;
      Send(TtEventFrame("{\"kind\":\"permissions\",\"allow_trading\":" + JBool(allow == 1) + ",\"automated_trading\":" + JBool(automated == 1) + "}"));
     }

   // Ticks: a changed quote at most every 250 ms per symbol, the unchanged
   // quote again every 500 ms (a refresh; its time stays the change time).
   void              PushTicks(void)
     {
      long now = (long)GetTickCount();
      for(int i = 0; i < ArraySize(m_symbols.v); i++)
        {
         double bid = 0;
         double ask = 0;
         long t = 0;
         if(!TermQuote(m_symbols.v[i], bid, ask, t) || bid <= 0 || ask <= 0)
            continue;
         long since = now - m_sentAt.v[i];
         if(since < 0)
            since = 1000000;
         bool changed = bid != m_sentBid.v[i] || ask != m_sentAsk.v[i] || m_sentTime.v[i] == 0;
         if(changed && since < 250)
            continue;
         if(!changed && since < 500)
            continue;
         if(changed)
           {
            m_sentBid.v[i] = bid;
            m_sentAsk.v[i] = ask;
            m_sentTime.v[i] = t;
           }
         m_sentAt.v[i] = now;
         Send(TtEventFrame("{\"kind\":\"tick\",\"symbol\":" + JStr(m_symbols.v[i]) + ",\"bid\":" + JNum(m_sentBid.v[i]) +
                           ",\"ask\":" + JNum(m_sentAsk.v[i]) + ",\"time\":" + JInt(m_sentTime.v[i]) + "}"));
        }
     }

   // Account snapshot when balance, equity or margin changed (at most 1/s).
   void              PushAccount(void)
     {
      uint now = GetTickCount();
      if(m_lastAccountCheck != 0 && now - m_lastAccountCheck < 1000)
         return;
      m_lastAccountCheck = now;
      if(m_lastAccountCheck == 0)
         m_lastAccountCheck = 1;
      double balance = 0;
      double equity = 0;
      double margin = 0;
      TermAccountNumbers(balance, equity, margin);
      if(balance == m_sentBalance && equity == m_sentEquity && margin == m_sentMargin)
         return;
      m_sentBalance = balance;
      m_sentEquity = equity;
      m_sentMargin = margin;
      string info = TermAccountInfoJson();
      Send(TtEventFrame("{\"kind\":\"account\"," + StringSubstr(info, 1)));
     }
  };

#endif
