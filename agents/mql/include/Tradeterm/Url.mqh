//+------------------------------------------------------------------+
//| Tradeterm/Url.mqh                                                |
//| Gateway URL handling: one input URL serves both transports.      |
//| `ws://`, `wss://`, `http://` and `https://` are accepted, with or |
//| without the `/agent/v1` or `/agent/v1/poll` path.                |
//+------------------------------------------------------------------+
#ifndef TRADETERM_URL_MQH
#define TRADETERM_URL_MQH

#include "Platform.mqh"

class TtUrl
  {
public:
   bool              tls;
   string            host;
   uint              port;
   string            path;     // path given in the URL ("" when none)
   string            error;

   bool              Parse(const string url)
     {
      string u = url;
      tls = false;
      host = "";
      port = 0;
      path = "";
      error = "";
      int sep = StringFind(u, "://");
      if(sep < 0)
        {
         error = "the gateway URL needs a scheme (wss://, ws://, https:// or http://)";
         return false;
        }
      string scheme = StringSubstr(u, 0, sep);
      StringToLower(scheme);
      if(scheme == "wss" || scheme == "https")
         tls = true;
      else if(scheme != "ws" && scheme != "http")
        {
         error = "unsupported scheme `" + scheme + "`";
         return false;
        }
      string rest = StringSubstr(u, sep + 3);
      int slash = StringFind(rest, "/");
      string hostport = rest;
      if(slash >= 0)
        {
         hostport = StringSubstr(rest, 0, slash);
         path = StringSubstr(rest, slash);
        }
      port = 80;
      if(tls)
         port = 443;
      host = hostport;
      int colon = StringFind(hostport, ":");
      if(colon >= 0)
        {
         host = StringSubstr(hostport, 0, colon);
         long p = StringToInteger(StringSubstr(hostport, colon + 1));
         if(p <= 0 || p > 65535)
           {
            error = "bad port in the gateway URL";
            return false;
           }
         port = (uint)p;
        }
      if(host == "")
        {
         error = "no host in the gateway URL";
         return false;
        }
      // Trailing slashes do not matter.
      while(StringLen(path) > 0 && StringGetCharacter(path, StringLen(path) - 1) == '/')
         path = StringSubstr(path, 0, StringLen(path) - 1);
      return true;
     }

   string            HostPort(void)
     {
      if((tls && port == 443) || (!tls && port == 80))
         return host;
      return host + ":" + IntegerToString(port);
     }

   // The WebSocket path: the given path, `/agent/v1` when none.
   string            WsPath(void)
     {
      if(path == "" || path == "/agent/v1/poll")
         return "/agent/v1";
      return path;
     }

   // `http(s)://host:port/agent/v1/poll` for the long-poll binding.
   string            PollBase(void)
     {
      string scheme = "http://";
      if(tls)
         scheme = "https://";
      string p = path;
      if(p == "" || p == "/agent/v1")
         p = "/agent/v1/poll";
      return scheme + HostPort() + p;
     }
  };

#endif
