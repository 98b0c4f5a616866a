//+------------------------------------------------------------------+
//| Tradeterm/WebSocket.mqh                                          |
//| RFC 6455 client over MQL5's native Socket* functions (MT5 only:  |
//| MQL4 has no sockets without DLLs). Text frames out (masked, as a |
//| client must), text frames in, fragmented messages reassembled,   |
//| ping answered with pong, close answered with close. Never waits  |
//| long: connecting is bounded by a timeout, reading only takes     |
//| what is already there.                                           |
//|                                                                  |
//| MetaTrader's rules (MQL5 reference) this code follows:           |
//|  - a connection to port 443 is secured by SocketConnect itself:  |
//|    SocketTlsHandshake is called only for TLS on other ports;     |
//|  - SocketRead returns -1 both on error and when nothing arrived  |
//|    within its timeout, and SocketIsReadable may answer a         |
//|    speculative 1 on an empty buffer: -1 is a lost connection     |
//|    only when SocketIsConnected says so;                          |
//|  - a SocketRead timeout of 0 means the default (120 s): the read |
//|    timeout is TT_WS_READ_TIMEOUT_MS, never 0.                    |
//+------------------------------------------------------------------+
#ifndef TRADETERM_WEBSOCKET_MQH
#define TRADETERM_WEBSOCKET_MQH

#include "Platform.mqh"
#include "Url.mqh"

#define TT_WS_MAX_MESSAGE (16 * 1024 * 1024)
#define TT_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define TT_WS_READ_TIMEOUT_MS 1

class TtWebSocket
  {
public:
   int               m_sock;
   bool              m_tls;
   bool              m_open;
   string            error;
   TtBytes           m_rx;       // raw bytes received, from m_rxPos on unread
   int               m_rxLen;
   int               m_rxPos;
   TtBytes           m_msg;      // message being reassembled
   int               m_msgLen;
   int               m_msgOp;    // 1 text, 2 binary, 0 none
   TtBytes           m_tmp;

                     TtWebSocket(void) { m_sock = INVALID_HANDLE; m_tls = false; m_open = false; m_rxLen = 0; m_rxPos = 0; m_msgLen = 0; m_msgOp = 0; }

   bool              IsOpen(void) { return m_open; }

   // Connects, upgrades to WebSocket and returns true when open. Waits at
   // most `timeoutMs` in total.
   bool              Connect(const string url, const uint timeoutMs)
     {
      Close();
      error = "";
      TtUrl u;
      if(!u.Parse(url))
        {
         error = u.error;
         return false;
        }
      m_tls = u.tls;
      uint start = GetTickCount();
      ResetLastError();
      m_sock = SocketCreate();
      if(m_sock == INVALID_HANDLE)
        {
         error = "SocketCreate failed, error " + IntegerToString(GetLastError());
         return false;
        }
      if(!SocketConnect(m_sock, u.host, u.port, timeoutMs))
        {
         int e = GetLastError();
         error = "cannot connect to " + u.HostPort() + ", error " + IntegerToString(e);
         if(e == 4014)
            error = error + " (add the gateway URL under Tools > Options > Expert Advisors)";
         Close();
         return false;
        }
      SocketTimeouts(m_sock, timeoutMs, timeoutMs);
      // Port 443: the terminal secured the socket in SocketConnect.
      if(m_tls && u.port != 443 && !SocketTlsHandshake(m_sock, u.host))
        {
         error = "TLS handshake with " + u.host + " failed, error " + IntegerToString(GetLastError());
         Close();
         return false;
        }
      // Sec-WebSocket-Key: 16 random bytes, base64.
      TtBytes raw;
      ArrayResize(raw.v, 16);
      for(int i = 0; i < 16; i++)
         raw.v[i] = (uchar)(MathRand() & 0xFF);
      TtBytes none;
      TtBytes b64;
      CryptEncode(CRYPT_BASE64, raw.v, none.v, b64.v);
      string key = CharArrayToString(b64.v, 0, ArraySize(b64.v));
      string req = "GET " + u.WsPath() + " HTTP/1.1\r\n" +
                   "Host: " + u.HostPort() + "\r\n" +
                   "Upgrade: websocket\r\n" +
                   "Connection: Upgrade\r\n" +
                   "Sec-WebSocket-Key: " + key + "\r\n" +
                   "Sec-WebSocket-Version: 13\r\n" +
                   "User-Agent: tradeterm-agent-mql\r\n\r\n";
      TtBytes out;
      int n = StringToCharArray(req, out.v, 0, WHOLE_ARRAY, CP_UTF8) - 1;
      if(!SendRaw(out, n))
        {
         error = "sending the WebSocket upgrade failed, error " + IntegerToString(GetLastError());
         Close();
         return false;
        }
      // Read the HTTP answer up to the empty line.
      m_rxLen = 0;
      m_rxPos = 0;
      int headEnd = -1;
      while(headEnd < 0)
        {
         if(!ReadAvailable())
           {
            error = "the gateway closed the connection during the upgrade";
            Close();
            return false;
           }
         headEnd = FindHeaderEnd();
         if(headEnd >= 0)
            break;
         if(GetTickCount() - start > timeoutMs)
           {
            error = "no WebSocket upgrade answer within " + IntegerToString(timeoutMs) + " ms";
            Close();
            return false;
           }
         Sleep(5);
        }
      string head = CharArrayToString(m_rx.v, 0, headEnd, CP_UTF8);
      m_rxPos = headEnd + 4;
      if(StringFind(head, " 101") < 0)
        {
         int eol = StringFind(head, "\r\n");
         error = "the gateway refused the WebSocket upgrade: " + StringSubstr(head, 0, eol);
         Close();
         return false;
        }
      // Sec-WebSocket-Accept = base64(SHA1(key + GUID)).
      TtBytes kb;
      int kn = StringToCharArray(key + TT_WS_GUID, kb.v, 0, WHOLE_ARRAY, CP_UTF8) - 1;
      ArrayResize(kb.v, kn);
      TtBytes sha;
      TtBytes acc;
      CryptEncode(CRYPT_HASH_SHA1, kb.v, none.v, sha.v);
      CryptEncode(CRYPT_BASE64, sha.v, none.v, acc.v);
      string expect = CharArrayToString(acc.v, 0, ArraySize(acc.v));
      string lower = head;
      StringToLower(lower);
      int ap = StringFind(lower, "sec-websocket-accept:");
      if(ap < 0 || StringFind(head, expect, ap) < 0)
        {
         error = "bad Sec-WebSocket-Accept in the upgrade answer";
         Close();
         return false;
        }
      m_open = true;
      m_msgLen = 0;
      m_msgOp = 0;
      return true;
     }

   // Sends one text message as a single masked frame.
   bool              SendText(const string text)
     {
      TtBytes payload;
      int n = StringToCharArray(text, payload.v, 0, WHOLE_ARRAY, CP_UTF8) - 1;
      if(n < 0)
         n = 0;
      return SendFrame(1, payload, n);
     }

   // Reads what has arrived and appends every complete text message to
   // `inbox`. Answers pings and closes. Returns false once the connection
   // is gone (error says why).
   bool              Poll(TtStrings &inbox)
     {
      if(!m_open)
         return false;
      if(!ReadAvailable())
        {
         error = "connection lost";
         Close();
         return false;
        }
      while(m_open)
        {
         int avail = m_rxLen - m_rxPos;
         if(avail < 2)
            break;
         int b0 = m_rx.v[m_rxPos];
         int b1 = m_rx.v[m_rxPos + 1];
         bool fin = (b0 & 0x80) != 0;
         int op = b0 & 0x0F;
         bool masked = (b1 & 0x80) != 0;
         long plen = b1 & 0x7F;
         int hdr = 2;
         if(plen == 126)
           {
            if(avail < 4)
               break;
            plen = ((long)m_rx.v[m_rxPos + 2] << 8) | (long)m_rx.v[m_rxPos + 3];
            hdr = 4;
           }
         else if(plen == 127)
           {
            if(avail < 10)
               break;
            plen = 0;
            for(int i = 0; i < 8; i++)
               plen = (plen << 8) | (long)m_rx.v[m_rxPos + 2 + i];
            hdr = 10;
           }
         if(plen > TT_WS_MAX_MESSAGE)
           {
            error = "frame larger than 16 MiB";
            SendClose(1009);
            Close();
            return false;
           }
         int maskAt = hdr;
         if(masked)
            hdr += 4;
         if(avail < hdr + plen)
            break;
         int start = m_rxPos + hdr;
         int len = (int)plen;
         if(masked)
            for(int i = 0; i < len; i++)
               m_rx.v[start + i] = (uchar)(m_rx.v[start + i] ^ m_rx.v[m_rxPos + maskAt + (i % 4)]);
         m_rxPos += hdr + len;
         if(op == 9)
           {
            TtBytes pong;
            ArrayCopy(pong.v, m_rx.v, 0, start, len);
            SendFrame(10, pong, len);
           }
         else if(op == 10)
           {
           }
         else if(op == 8)
           {
            error = "the gateway closed the connection";
            SendClose(1000);
            Close();
            return false;
           }
         else if(op == 0 || op == 1 || op == 2)
           {
            if(op != 0)
              {
               m_msgOp = op;
               m_msgLen = 0;
              }
            if(m_msgLen + len > TT_WS_MAX_MESSAGE)
              {
               error = "message larger than 16 MiB";
               SendClose(1009);
               Close();
               return false;
              }
            if(len > 0)
              {
               ArrayResize(m_msg.v, m_msgLen + len, 65536);
               ArrayCopy(m_msg.v, m_rx.v, m_msgLen, start, len);
               m_msgLen += len;
              }
            if(fin)
              {
               if(m_msgOp == 1)
                 {
                  int k = ArraySize(inbox.v);
                  ArrayResize(inbox.v, k + 1, 16);
                  inbox.v[k] = CharArrayToString(m_msg.v, 0, m_msgLen, CP_UTF8);
                 }
               m_msgOp = 0;
               m_msgLen = 0;
              }
           }
        }
      Compact();
      return m_open;
     }

   // Sends a close frame (when open) and releases the socket.
   void              Shutdown(void)
     {
      if(m_open)
         SendClose(1000);
      Close();
     }

   void              Close(void)
     {
      if(m_sock != INVALID_HANDLE)
         SocketClose(m_sock);
      m_sock = INVALID_HANDLE;
      m_open = false;
      m_rxLen = 0;
      m_rxPos = 0;
      m_msgLen = 0;
      m_msgOp = 0;
     }

private:
   bool              SendRaw(TtBytes &buf, const int len)
     {
      if(m_sock == INVALID_HANDLE)
         return false;
      int sent = 0;
      if(m_tls)
         sent = SocketTlsSend(m_sock, buf.v, (uint)len);
      else
         sent = SocketSend(m_sock, buf.v, (uint)len);
      return sent == len;
     }

   bool              SendFrame(const int op, TtBytes &payload, const int len)
     {
      if(m_sock == INVALID_HANDLE)
         return false;
      int hdr = 2;
      if(len > 65535)
         hdr = 10;
      else if(len > 125)
         hdr = 4;
      TtBytes f;
      ArrayResize(f.v, hdr + 4 + len);
      f.v[0] = (uchar)(0x80 | op);
      if(hdr == 2)
         f.v[1] = (uchar)(0x80 | len);
      else if(hdr == 4)
        {
         f.v[1] = (uchar)(0x80 | 126);
         f.v[2] = (uchar)((len >> 8) & 0xFF);
         f.v[3] = (uchar)(len & 0xFF);
        }
      else
        {
         f.v[1] = (uchar)(0x80 | 127);
         long l = len;
         for(int i = 0; i < 8; i++)
            f.v[2 + i] = (uchar)((l >> (8 * (7 - i))) & 0xFF);
        }
      uchar mask[4];
      for(int i = 0; i < 4; i++)
        {
         mask[i] = (uchar)(MathRand() & 0xFF);
         f.v[hdr + i] = mask[i];
        }
      for(int i = 0; i < len; i++)
         f.v[hdr + 4 + i] = (uchar)(payload.v[i] ^ mask[i % 4]);
      if(!SendRaw(f, hdr + 4 + len))
        {
         error = "send failed, error " + IntegerToString(GetLastError());
         Close();
         return false;
        }
      return true;
     }

   void              SendClose(const int code)
     {
      TtBytes p;
      ArrayResize(p.v, 2);
      p.v[0] = (uchar)((code >> 8) & 0xFF);
      p.v[1] = (uchar)(code & 0xFF);
      SendFrame(8, p, 2);
     }

   // Appends what the socket has to m_rx; false when the connection is gone.
   bool              ReadAvailable(void)
     {
      if(m_sock == INVALID_HANDLE)
         return false;
      for(int pass = 0; pass < 64; pass++)
        {
         int got = 0;
         if(m_tls)
           {
            // 0 = nothing decrypted yet (regular), -1 = the connection is gone.
            got = SocketTlsReadAvailable(m_sock, m_tmp.v, 1048576);
            if(got < 0)
               return false;
            if(got == 0 && !SocketIsConnected(m_sock))
               return false;
           }
         else
           {
            uint avail = SocketIsReadable(m_sock);
            if(avail == 0)
              {
               if(!SocketIsConnected(m_sock))
                  return false;
               break;
              }
            if(avail > 1048576)
               avail = 1048576;
            got = SocketRead(m_sock, m_tmp.v, avail, TT_WS_READ_TIMEOUT_MS);
            if(got < 0)
              {
               // Nothing within the timeout (a speculative SocketIsReadable)
               // or an error: only a closed socket is a lost connection.
               if(!SocketIsConnected(m_sock))
                  return false;
               break;
              }
           }
         if(got <= 0)
            break;
         ArrayResize(m_rx.v, m_rxLen + got, 65536);
         ArrayCopy(m_rx.v, m_tmp.v, m_rxLen, 0, got);
         m_rxLen += got;
        }
      return true;
     }

   int               FindHeaderEnd(void)
     {
      for(int i = m_rxPos; i + 3 < m_rxLen; i++)
         if(m_rx.v[i] == '\r' && m_rx.v[i + 1] == '\n' && m_rx.v[i + 2] == '\r' && m_rx.v[i + 3] == '\n')
            return i;
      return -1;
     }

   void              Compact(void)
     {
      if(m_rxPos == 0)
         return;
      int rest = m_rxLen - m_rxPos;
      if(rest > 0)
        {
         TtBytes keep;
         ArrayCopy(keep.v, m_rx.v, 0, m_rxPos, rest);
         ArrayResize(m_rx.v, rest);
         ArrayCopy(m_rx.v, keep.v, 0, 0, rest);
        }
      else
         ArrayResize(m_rx.v, 0);
      m_rxLen = rest;
      m_rxPos = 0;
     }
  };

#endif
