//+------------------------------------------------------------------+
//| Tradeterm/Protocol.mqh                                           |
//| Agent protocol v1 (docs/agent-protocol.md): error codes, the     |
//| error body, frame builders, retcode names and time helpers.      |
//+------------------------------------------------------------------+
#ifndef TRADETERM_PROTOCOL_MQH
#define TRADETERM_PROTOCOL_MQH

#include "Platform.mqh"
#include "Json.mqh"

#define TT_PROTOCOL_VERSION 1
#define TT_AGENT_VERSION    "1.0.0"

#define TT_MALFORMED_FRAME    "MALFORMED_FRAME"
#define TT_UNKNOWN_COMMAND    "UNKNOWN_COMMAND"
#define TT_INVALID_ARGUMENT   "INVALID_ARGUMENT"
#define TT_NOT_FOUND          "NOT_FOUND"
#define TT_NOT_SUPPORTED      "NOT_SUPPORTED"
#define TT_TRADING_DISABLED   "TRADING_DISABLED"
#define TT_TRADE_REJECTED     "TRADE_REJECTED"
#define TT_INTERNAL           "INTERNAL"
#define TT_AUTH_FAILED        "AUTH_FAILED"

#define TT_MAX_BARS 100000

// An error body: `{ "code", "message", "retcode"? }`.
struct TtErr
  {
   string            code;
   string            message;
   string            retcode;
  };

// Fills `e` and returns false (so handlers can `return TtFail(...)`).
bool TtFail(TtErr &e, const string code, const string message)
  {
   e.code = code;
   e.message = message;
   e.retcode = "";
   return false;
  }

// A trade rejection with its protocol retcode name.
bool TtReject(TtErr &e, const string retcode, const string message)
  {
   e.code = TT_TRADE_REJECTED;
   e.message = message;
   e.retcode = retcode;
   return false;
  }

string TtErrJson(TtErr &e)
  {
   string s = "{" + JKV("code", JStr(e.code)) + "," + JKV("message", JStr(e.message));
   if(e.retcode != "")
      s = s + "," + JKV("retcode", JStr(e.retcode));
   return s + "}";
  }

string TtResponseOk(const string id, const string result)
  {
   return "{\"type\":\"response\",\"id\":" + JStr(id) + ",\"result\":" + result + "}";
  }

string TtResponseErr(const string id, TtErr &e)
  {
   return "{\"type\":\"response\",\"id\":" + JStr(id) + ",\"error\":" + TtErrJson(e) + "}";
  }

string TtEventFrame(const string eventJson)
  {
   return "{\"type\":\"event\",\"event\":" + eventJson + "}";
  }

// Now, unix ms UTC (second resolution: used for pings only).
long TtNowMs(void)
  {
   return (long)TimeGMT() * 1000;
  }

// Whether the command changes the account.
bool TtIsTradeCommand(const string cmd)
  {
   return cmd == "place_order" || cmd == "close_position" || cmd == "modify_position" ||
          cmd == "cancel_order" || cmd == "reverse_position" || cmd == "modify_order" || cmd == "close_by";
  }

// The trade commands that carry an idempotency key.
bool TtIsIdempotentCommand(const string cmd)
  {
   return cmd == "place_order" || cmd == "close_position" || cmd == "reverse_position" || cmd == "modify_order" ||
          cmd == "close_by";
  }

// Protocol name of an MT5 trade server return code (TRADE_RETCODE_*).
// MT4 error codes are mapped to these names in the MT4 adapter.
string TtRetcodeName(const long rc)
  {
   if(rc == 10004) return "requote";
   if(rc == 10006) return "rejected";
   if(rc == 10007) return "canceled";
   if(rc == 10008) return "placed";
   if(rc == 10009) return "done";
   if(rc == 10010) return "done_partial";
   if(rc == 10011) return "error";
   if(rc == 10012) return "timeout";
   if(rc == 10013) return "invalid_request";
   if(rc == 10014) return "invalid_volume";
   if(rc == 10015) return "invalid_price";
   if(rc == 10016) return "invalid_stops";
   if(rc == 10017) return "trade_disabled";
   if(rc == 10018) return "market_closed";
   if(rc == 10019) return "no_money";
   if(rc == 10020) return "price_changed";
   if(rc == 10021) return "price_off";
   if(rc == 10022) return "invalid_expiration";
   if(rc == 10023) return "order_changed";
   if(rc == 10024) return "too_many_requests";
   if(rc == 10025) return "no_changes";
   if(rc == 10026) return "autotrading_disabled_by_server";
   if(rc == 10027) return "autotrading_disabled_by_client";
   if(rc == 10028) return "locked";
   if(rc == 10029) return "frozen";
   if(rc == 10030) return "invalid_fill";
   if(rc == 10031) return "connection";
   if(rc == 10032) return "only_real";
   if(rc == 10033) return "limit_orders";
   if(rc == 10034) return "limit_volume";
   if(rc == 10035) return "invalid_order";
   if(rc == 10036) return "position_closed";
   if(rc == 10038) return "invalid_close_volume";
   if(rc == 10039) return "close_order_exist";
   if(rc == 10040) return "limit_positions";
   if(rc == 10041) return "reject_cancel";
   if(rc == 10042) return "long_only";
   if(rc == 10043) return "short_only";
   if(rc == 10044) return "close_only";
   if(rc == 10045) return "fifo_close";
   if(rc == 10046) return "hedge_prohibited";
   return "retcode_" + IntegerToString(rc);
  }

// BUY_STOP_LIMIT, SELL_STOP_LIMIT (MT5 only; MT4 answers NOT_SUPPORTED).
bool TtIsStopLimitType(const string t)
  {
   return t == "BUY_STOP_LIMIT" || t == "SELL_STOP_LIMIT";
  }

// Validates a protocol order type name.
bool TtIsOrderType(const string t)
  {
   return t == "BUY" || t == "SELL" || t == "BUY_LIMIT" || t == "SELL_LIMIT" || t == "BUY_STOP" || t == "SELL_STOP" ||
          TtIsStopLimitType(t);
  }

bool TtIsBuyType(const string t)
  {
   return t == "BUY" || t == "BUY_LIMIT" || t == "BUY_STOP" || t == "BUY_STOP_LIMIT";
  }

// Validates a protocol expiration mode name (absent is GTC).
bool TtIsExpirationMode(const string m)
  {
   return m == "GTC" || m == "DAY" || m == "SPECIFIED" || m == "SPECIFIED_DAY";
  }

// `s` without leading and trailing blanks.
string TtTrim(const string s)
  {
   int a = 0;
   int b = StringLen(s);
   while(a < b && StringGetCharacter(s, a) <= ' ')
      a++;
   while(b > a && StringGetCharacter(s, b - 1) <= ' ')
      b--;
   return StringSubstr(s, a, b - a);
  }

// Splits "A, B ,C" into trimmed non-empty items.
int TtSplitList(const string text, TtStrings &out)
  {
   TtStrings parts;
   StringSplit(text, ',', parts.v);
   ArrayResize(out.v, 0);
   int k = 0;
   for(int i = 0; i < ArraySize(parts.v); i++)
     {
      string p = TtTrim(parts.v[i]);
      if(p == "")
         continue;
      ArrayResize(out.v, k + 1);
      out.v[k] = p;
      k++;
     }
   return k;
  }

// Length of `s` in bytes of UTF-8 (MQL strings are UTF-16 code units:
// StringLen counts units, the protocol's limits count the bytes sent).
int TtUtf8Len(const string s)
  {
   int n = StringLen(s);
   int bytes = 0;
   for(int i = 0; i < n; i++)
     {
      ushort c = StringGetCharacter(s, i);
      if(c < 0x80)
         bytes += 1;
      else if(c < 0x800)
         bytes += 2;
      else if(c >= 0xD800 && c < 0xDC00 && i + 1 < n && StringGetCharacter(s, i + 1) >= 0xDC00 && StringGetCharacter(s, i + 1) < 0xE000)
        {
         bytes += 4;
         i++;
        }
      else
         bytes += 3;
     }
   return bytes;
  }

// Lower-case hex of bytes.
string TtHex(TtBytes &b, const int n)
  {
   string hex = "0123456789abcdef";
   string out = "";
   for(int i = 0; i < n; i++)
     {
      StringAdd(out, StringSubstr(hex, (b.v[i] >> 4) & 15, 1));
      StringAdd(out, StringSubstr(hex, b.v[i] & 15, 1));
     }
   return out;
  }

// SHA-256 of a string, lower-case hex.
string TtSha256Hex(const string s)
  {
   TtBytes data;
   int n = StringToCharArray(s, data.v, 0, WHOLE_ARRAY, CP_UTF8) - 1;
   if(n < 0)
      n = 0;
   ArrayResize(data.v, n);
   TtBytes none;
   TtBytes hash;
   int k = CryptEncode(CRYPT_HASH_SHA256, data.v, none.v, hash.v);
   return TtHex(hash, k);
  }

// Weekly trade sessions (SymbolInfoSessionTrade, server time) in UTC
// minutes, split at midnight UTC.
string TtSessionsJson(const string symbol, const long serverOffsetSec)
  {
   long offsetMin = serverOffsetSec / 60;
   string items = "";
   bool firstItem = true;
   for(int day = 0; day < 7; day++)
     {
      for(int k = 0; k < 10; k++)
        {
         datetime from = 0;
         datetime to = 0;
         if(!SymbolInfoSessionTrade(symbol, (ENUM_DAY_OF_WEEK)day, (uint)k, from, to))
            break;
         long a = day * 1440 + (long)from / 60 - offsetMin;
         long b = day * 1440 + (long)to / 60 - offsetMin;
         if(b <= a)
            b += 1440;
         while(a < b)
           {
            long wa = ((a % 10080) + 10080) % 10080;
            long d = wa / 1440;
            long open = wa % 1440;
            long len = b - a;
            if(len > 1440 - open)
               len = 1440 - open;
            if(!firstItem)
               StringAdd(items, ",");
            firstItem = false;
            StringAdd(items, "{\"day\":" + JInt(d) + ",\"open\":" + JInt(open) + ",\"close\":" + JInt(open + len) + "}");
            a += len;
           }
        }
     }
   return "[" + items + "]";
  }

#endif
