//+------------------------------------------------------------------+
//| Tradeterm/Platform.mqh                                           |
//| The only place where the shared agent code differs between the   |
//| MQL compilers (MetaEditor, MQL4 and MQL5) and the C++ harness.   |
//|                                                                  |
//| The shared code never declares native dynamic arrays (`int a[]`  |
//| is not C++): it uses these wrappers and their one member `v`,    |
//| e.g. `TtInts a; ArrayResize(a.v, 3); a.v[0] = 1;`. In MQL `v` is |
//| a native dynamic array; in the harness it is a std::vector and   |
//| ArrayResize/ArraySize/ArrayCopy are templates over it            |
//| (agents/mql/harness/mql_compat.h). Only the #define lines inside |
//| `#ifdef TT_MQL` are MetaEditor's alone (the harness test checks  |
//| them, see agents/mql/README.md).                                 |
//+------------------------------------------------------------------+
#ifndef TRADETERM_PLATFORM_MQH
#define TRADETERM_PLATFORM_MQH

// MetaEditor defines __MQL4__ for *.mq4 and __MQL5__ for *.mq5 files (the
// documented predefined macros); TT_MQL means "compiled by MetaEditor".
#ifdef __MQL4__
#define TT_MQL
#endif
#ifdef __MQL5__
#define TT_MQL
#endif

// The one line that differs: a member that is a native dynamic array in
// MQL, a std::vector (with ArrayResize & co. as templates over it) in the
// harness. Everything below it is compiled by both.
#ifdef TT_MQL
#define TT_ARRAY(T) T v[]
#else
#include <mql_compat.h>
#endif

class TtInts    { public: TT_ARRAY(int); };
class TtLongs   { public: TT_ARRAY(long); };
class TtDoubles { public: TT_ARRAY(double); };
class TtStrings { public: TT_ARRAY(string); };
class TtBytes   { public: TT_ARRAY(uchar); };
class TtChars   { public: TT_ARRAY(char); };
class TtRates   { public: TT_ARRAY(MqlRates); };
class TtTicks   { public: TT_ARRAY(MqlTick); };

#endif
