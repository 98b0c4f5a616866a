//+------------------------------------------------------------------+
//| Tradeterm/Json.mqh                                               |
//| JSON for the agent protocol: a parser into a flat node table     |
//| (no pointers, no objects in arrays: the subset MQL4, MQL5 and    |
//| C++ share) and small writer helpers that build compact JSON text.|
//+------------------------------------------------------------------+
#ifndef TRADETERM_JSON_MQH
#define TRADETERM_JSON_MQH

#include "Platform.mqh"

#define TT_JNULL   0
#define TT_JBOOL   1
#define TT_JNUM    2
#define TT_JSTR    3
#define TT_JARR    4
#define TT_JOBJ    5
#define TT_JSON_MAX_DEPTH 64

//--- writer helpers ------------------------------------------------

// A JSON string literal of `s` (quotes, backslashes and control
// characters escaped; everything else passed through as UTF-8).
string JStr(const string s)
  {
   int n = StringLen(s);
   bool plain = true;
   for(int i = 0; i < n; i++)
     {
      ushort c = StringGetCharacter(s, i);
      if(c < 0x20 || c == '"' || c == '\\')
        {
         plain = false;
         break;
        }
     }
   if(plain)
      return "\"" + s + "\"";
   string out = "\"";
   int from = 0;
   for(int i = 0; i < n; i++)
     {
      ushort c = StringGetCharacter(s, i);
      if(c >= 0x20 && c != '"' && c != '\\')
         continue;
      if(i > from)
         StringAdd(out, StringSubstr(s, from, i - from));
      from = i + 1;
      if(c == '"')
         StringAdd(out, "\\\"");
      else if(c == '\\')
         StringAdd(out, "\\\\");
      else if(c == '\n')
         StringAdd(out, "\\n");
      else if(c == '\r')
         StringAdd(out, "\\r");
      else if(c == '\t')
         StringAdd(out, "\\t");
      else
        {
         string hex = "0123456789abcdef";
         StringAdd(out, "\\u00");
         StringAdd(out, StringSubstr(hex, (c >> 4) & 15, 1));
         StringAdd(out, StringSubstr(hex, c & 15, 1));
        }
     }
   if(n > from)
      StringAdd(out, StringSubstr(s, from, n - from));
   StringAdd(out, "\"");
   return out;
  }

// A JSON number (`null` for NaN and infinities), shortest form with up to
// 10 decimals: 1.08412, 0.1, 10000.
string JNum(const double x)
  {
   if(!MathIsValidNumber(x))
      return "null";
   string s = DoubleToString(x, 10);
   int n = StringLen(s);
   if(StringFind(s, ".") >= 0)
     {
      while(n > 0 && StringGetCharacter(s, n - 1) == '0')
         n--;
      if(n > 0 && StringGetCharacter(s, n - 1) == '.')
         n--;
      s = StringSubstr(s, 0, n);
     }
   if(s == "-0")
      s = "0";
   return s;
  }

// A number, or `null` when `present` is false.
string JOptNum(const double x, const bool present)
  {
   if(!present)
      return "null";
   return JNum(x);
  }

// An integer.
string JInt(const long x)
  {
   return IntegerToString(x);
  }

// `true` or `false`.
string JBool(const bool b)
  {
   if(b)
      return "true";
   return "false";
  }

// `"name":value` (value already JSON).
string JKV(const string name, const string value)
  {
   return "\"" + name + "\":" + value;
  }

//--- parser --------------------------------------------------------

// A parsed JSON document: node 0 is the root. Children of arrays and objects
// are linked through first/next; object members carry their name in key.
class TtJson
  {
public:
   TtInts            type;
   TtInts            first;
   TtInts            last;
   TtInts            next;
   TtInts            count;
   TtStrings         key;
   TtStrings         str;      // string value, or the number's text
   TtDoubles         num;
   TtLongs           ival;     // integer value of numbers and booleans
   int               n;
   string            error;
   string            m_text;
   int               m_pos;
   int               m_len;

                     TtJson(void) { n = 0; error = ""; m_pos = 0; m_len = 0; }

   // Parses `text`; false (and `error`) when it is not one JSON value.
   bool              Parse(const string text)
     {
      n = 0;
      error = "";
      m_text = text;
      m_pos = 0;
      m_len = StringLen(text);
      ArrayResize(type.v, 0, 64);
      ArrayResize(first.v, 0, 64);
      ArrayResize(last.v, 0, 64);
      ArrayResize(next.v, 0, 64);
      ArrayResize(count.v, 0, 64);
      ArrayResize(key.v, 0, 64);
      ArrayResize(str.v, 0, 64);
      ArrayResize(num.v, 0, 64);
      ArrayResize(ival.v, 0, 64);
      int root = ParseValue(0);
      if(root < 0)
        {
         m_text = "";
         return false;
        }
      SkipWs();
      if(m_pos != m_len)
        {
         error = "trailing characters at " + IntegerToString(m_pos);
         m_text = "";
         return false;
        }
      m_text = "";
      return true;
     }

   int               Type(const int node) { if(node < 0 || node >= n) return -1; return type.v[node]; }
   bool              IsObject(const int node) { return Type(node) == TT_JOBJ; }
   bool              IsArray(const int node) { return Type(node) == TT_JARR; }
   int               Count(const int node) { if(node < 0 || node >= n) return 0; return count.v[node]; }

   // The member `name` of object `node`, or -1.
   int               Get(const int node, const string name)
     {
      if(Type(node) != TT_JOBJ)
         return -1;
      for(int c = first.v[node]; c >= 0; c = next.v[c])
         if(key.v[c] == name)
            return c;
      return -1;
     }

   // The `index`-th element of array `node`, or -1.
   int               At(const int node, const int index)
     {
      int i = 0;
      if(node < 0 || node >= n)
         return -1;
      for(int c = first.v[node]; c >= 0; c = next.v[c])
        {
         if(i == index)
            return c;
         i++;
        }
      return -1;
     }

   int               FirstChild(const int node) { if(node < 0 || node >= n) return -1; return first.v[node]; }
   int               NextSibling(const int node) { if(node < 0 || node >= n) return -1; return next.v[node]; }
   string            Key(const int node) { if(node < 0 || node >= n) return ""; return key.v[node]; }

   string            Str(const int node) { if(Type(node) != TT_JSTR) return ""; return str.v[node]; }
   double            Num(const int node) { if(Type(node) != TT_JNUM) return 0.0; return num.v[node]; }
   long              Long(const int node) { if(Type(node) != TT_JNUM && Type(node) != TT_JBOOL) return 0; return ival.v[node]; }
   bool              Bool(const int node) { return Type(node) == TT_JBOOL && ival.v[node] != 0; }

   // Member present and not null.
   bool              Has(const int node, const string name) { int c = Get(node, name); return c >= 0 && type.v[c] != TT_JNULL; }
   string            GetStr(const int node, const string name, const string def) { int c = Get(node, name); if(Type(c) != TT_JSTR) return def; return str.v[c]; }
   double            GetNum(const int node, const string name, const double def) { int c = Get(node, name); if(Type(c) != TT_JNUM) return def; return num.v[c]; }
   long              GetLong(const int node, const string name, const long def) { int c = Get(node, name); if(Type(c) != TT_JNUM) return def; return ival.v[c]; }
   bool              GetBool(const int node, const string name, const bool def) { int c = Get(node, name); if(Type(c) != TT_JBOOL) return def; return ival.v[c] != 0; }

   // Whether the member is a number that is a whole number.
   bool              IsInteger(const int node) { if(Type(node) != TT_JNUM) return false; return StringFind(str.v[node], ".") < 0 && StringFind(str.v[node], "e") < 0 && StringFind(str.v[node], "E") < 0; }

   // Compact JSON text of `node` (members in their original order); `null`
   // for a missing node (-1).
   string            Serialize(const int node)
     {
      int t = Type(node);
      if(t < 0 || t == TT_JNULL)
         return "null";
      if(t == TT_JBOOL)
         return JBool(ival.v[node] != 0);
      if(t == TT_JNUM)
         return str.v[node];
      if(t == TT_JSTR)
         return JStr(str.v[node]);
      string out = "[";
      if(t == TT_JOBJ)
         out = "{";
      bool firstItem = true;
      for(int c = first.v[node]; c >= 0; c = next.v[c])
        {
         if(!firstItem)
            StringAdd(out, ",");
         firstItem = false;
         if(t == TT_JOBJ)
           {
            StringAdd(out, JStr(key.v[c]));
            StringAdd(out, ":");
           }
         StringAdd(out, Serialize(c));
        }
      if(t == TT_JOBJ)
         StringAdd(out, "}");
      else
         StringAdd(out, "]");
      return out;
     }

private:
   int               NewNode(const int t)
     {
      int i = n;
      n++;
      int cap = 64 + n / 2;
      ArrayResize(type.v, n, cap);
      ArrayResize(first.v, n, cap);
      ArrayResize(last.v, n, cap);
      ArrayResize(next.v, n, cap);
      ArrayResize(count.v, n, cap);
      ArrayResize(key.v, n, cap);
      ArrayResize(str.v, n, cap);
      ArrayResize(num.v, n, cap);
      ArrayResize(ival.v, n, cap);
      type.v[i] = t;
      first.v[i] = -1;
      last.v[i] = -1;
      next.v[i] = -1;
      count.v[i] = 0;
      key.v[i] = "";
      str.v[i] = "";
      num.v[i] = 0.0;
      ival.v[i] = 0;
      return i;
     }

   void              Append(const int parent, const int child)
     {
      if(last.v[parent] < 0)
         first.v[parent] = child;
      else
         next.v[last.v[parent]] = child;
      last.v[parent] = child;
      count.v[parent]++;
     }

   void              SkipWs(void)
     {
      while(m_pos < m_len)
        {
         ushort c = StringGetCharacter(m_text, m_pos);
         if(c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
         m_pos++;
        }
     }

   bool              Fail(const string what)
     {
      if(error == "")
         error = what + " at " + IntegerToString(m_pos);
      return false;
     }

   bool              Literal(const string word)
     {
      int k = StringLen(word);
      if(StringSubstr(m_text, m_pos, k) != word)
         return Fail("invalid literal");
      m_pos += k;
      return true;
     }

   int               Hex4(void)
     {
      if(m_pos + 4 > m_len)
         return -1;
      int v = 0;
      for(int i = 0; i < 4; i++)
        {
         ushort c = StringGetCharacter(m_text, m_pos + i);
         int d = -1;
         if(c >= '0' && c <= '9')
            d = c - '0';
         else if(c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
         else if(c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
         if(d < 0)
            return -1;
         v = v * 16 + d;
        }
      m_pos += 4;
      return v;
     }

   // A code point as a string: encoded as UTF-8 bytes and decoded by the
   // platform (UTF-16 in MQL, UTF-8 bytes in the harness).
   string            CodePoint(const int cp)
     {
      TtBytes b;
      int k = 0;
      if(cp < 0x80)
        {
         ArrayResize(b.v, 1);
         b.v[0] = (uchar)cp;
         k = 1;
        }
      else if(cp < 0x800)
        {
         ArrayResize(b.v, 2);
         b.v[0] = (uchar)(0xC0 | (cp >> 6));
         b.v[1] = (uchar)(0x80 | (cp & 0x3F));
         k = 2;
        }
      else if(cp < 0x10000)
        {
         ArrayResize(b.v, 3);
         b.v[0] = (uchar)(0xE0 | (cp >> 12));
         b.v[1] = (uchar)(0x80 | ((cp >> 6) & 0x3F));
         b.v[2] = (uchar)(0x80 | (cp & 0x3F));
         k = 3;
        }
      else
        {
         ArrayResize(b.v, 4);
         b.v[0] = (uchar)(0xF0 | (cp >> 18));
         b.v[1] = (uchar)(0x80 | ((cp >> 12) & 0x3F));
         b.v[2] = (uchar)(0x80 | ((cp >> 6) & 0x3F));
         b.v[3] = (uchar)(0x80 | (cp & 0x3F));
         k = 4;
        }
      return CharArrayToString(b.v, 0, k, CP_UTF8);
     }

   bool              ParseString(string &out)
     {
      // at the opening quote
      m_pos++;
      out = "";
      int from = m_pos;
      while(m_pos < m_len)
        {
         ushort c = StringGetCharacter(m_text, m_pos);
         if(c == '"')
           {
            if(m_pos > from)
               StringAdd(out, StringSubstr(m_text, from, m_pos - from));
            m_pos++;
            return true;
           }
         if(c < 0x20)
            return Fail("control character in string");
         if(c != '\\')
           {
            m_pos++;
            continue;
           }
         if(m_pos > from)
            StringAdd(out, StringSubstr(m_text, from, m_pos - from));
         m_pos++;
         if(m_pos >= m_len)
            return Fail("unterminated escape");
         ushort e = StringGetCharacter(m_text, m_pos);
         m_pos++;
         if(e == '"')
            StringAdd(out, "\"");
         else if(e == '\\')
            StringAdd(out, "\\");
         else if(e == '/')
            StringAdd(out, "/");
         else if(e == 'b')
            StringAdd(out, CodePoint(8));
         else if(e == 'f')
            StringAdd(out, CodePoint(12));
         else if(e == 'n')
            StringAdd(out, "\n");
         else if(e == 'r')
            StringAdd(out, "\r");
         else if(e == 't')
            StringAdd(out, "\t");
         else if(e == 'u')
           {
            int cp = Hex4();
            if(cp < 0)
               return Fail("bad \\u escape");
            if(cp >= 0xD800 && cp < 0xDC00 && m_pos + 6 <= m_len &&
               StringGetCharacter(m_text, m_pos) == '\\' && StringGetCharacter(m_text, m_pos + 1) == 'u')
              {
               m_pos += 2;
               int lo = Hex4();
               if(lo >= 0xDC00 && lo < 0xE000)
                  cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
               else
                  return Fail("bad surrogate pair");
              }
            StringAdd(out, CodePoint(cp));
           }
         else
            return Fail("bad escape");
         from = m_pos;
        }
      return Fail("unterminated string");
     }

   int               ParseValue(const int depth)
     {
      if(depth > TT_JSON_MAX_DEPTH)
        {
         Fail("nesting too deep");
         return -1;
        }
      SkipWs();
      if(m_pos >= m_len)
        {
         Fail("unexpected end");
         return -1;
        }
      ushort c = StringGetCharacter(m_text, m_pos);
      if(c == '{')
         return ParseObject(depth);
      if(c == '[')
         return ParseArray(depth);
      if(c == '"')
        {
         string s;
         if(!ParseString(s))
            return -1;
         int node = NewNode(TT_JSTR);
         str.v[node] = s;
         return node;
        }
      if(c == 't')
        {
         if(!Literal("true"))
            return -1;
         int node = NewNode(TT_JBOOL);
         ival.v[node] = 1;
         return node;
        }
      if(c == 'f')
        {
         if(!Literal("false"))
            return -1;
         return NewNode(TT_JBOOL);
        }
      if(c == 'n')
        {
         if(!Literal("null"))
            return -1;
         return NewNode(TT_JNULL);
        }
      if(c == '-' || (c >= '0' && c <= '9'))
         return ParseNumber();
      Fail("unexpected character");
      return -1;
     }

   int               ParseNumber(void)
     {
      int start = m_pos;
      bool isInt = true;
      if(StringGetCharacter(m_text, m_pos) == '-')
         m_pos++;
      int digits = 0;
      while(m_pos < m_len)
        {
         ushort c = StringGetCharacter(m_text, m_pos);
         if(c >= '0' && c <= '9')
            digits++;
         else if(c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
            isInt = false;
         else
            break;
         m_pos++;
        }
      if(digits == 0)
        {
         Fail("bad number");
         return -1;
        }
      string text = StringSubstr(m_text, start, m_pos - start);
      int node = NewNode(TT_JNUM);
      str.v[node] = text;
      num.v[node] = StringToDouble(text);
      if(isInt && StringLen(text) <= 18)
         ival.v[node] = StringToInteger(text);
      else
         ival.v[node] = (long)MathRound(num.v[node]);
      return node;
     }

   int               ParseArray(const int depth)
     {
      m_pos++;
      int node = NewNode(TT_JARR);
      SkipWs();
      if(m_pos < m_len && StringGetCharacter(m_text, m_pos) == ']')
        {
         m_pos++;
         return node;
        }
      while(true)
        {
         int child = ParseValue(depth + 1);
         if(child < 0)
            return -1;
         Append(node, child);
         SkipWs();
         if(m_pos >= m_len)
           {
            Fail("unterminated array");
            return -1;
           }
         ushort c = StringGetCharacter(m_text, m_pos);
         m_pos++;
         if(c == ']')
            return node;
         if(c != ',')
           {
            Fail("expected , or ]");
            return -1;
           }
        }
      return -1;
     }

   int               ParseObject(const int depth)
     {
      m_pos++;
      int node = NewNode(TT_JOBJ);
      SkipWs();
      if(m_pos < m_len && StringGetCharacter(m_text, m_pos) == '}')
        {
         m_pos++;
         return node;
        }
      while(true)
        {
         SkipWs();
         if(m_pos >= m_len || StringGetCharacter(m_text, m_pos) != '"')
           {
            Fail("expected a member name");
            return -1;
           }
         string name;
         if(!ParseString(name))
            return -1;
         SkipWs();
         if(m_pos >= m_len || StringGetCharacter(m_text, m_pos) != ':')
           {
            Fail("expected :");
            return -1;
           }
         m_pos++;
         int child = ParseValue(depth + 1);
         if(child < 0)
            return -1;
         key.v[child] = name;
         Append(node, child);
         SkipWs();
         if(m_pos >= m_len)
           {
            Fail("unterminated object");
            return -1;
           }
         ushort c = StringGetCharacter(m_text, m_pos);
         m_pos++;
         if(c == '}')
            return node;
         if(c != ',')
           {
            Fail("expected , or }");
            return -1;
           }
        }
      return -1;
     }
  };

#endif
