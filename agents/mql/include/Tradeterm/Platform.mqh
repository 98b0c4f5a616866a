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
//| (agents/mql/harness/mql_compat.h).                               |
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

#ifdef TT_MQL
class TtInts    { public: int    v[]; };
class TtLongs   { public: long   v[]; };
class TtDoubles { public: double v[]; };
class TtStrings { public: string v[]; };
class TtBytes   { public: uchar  v[]; };
class TtChars   { public: char   v[]; };
class TtRates   { public: MqlRates v[]; };
class TtTicks   { public: MqlTick  v[]; };
#ifdef __MQL5__
class TtCalendarValues { public: MqlCalendarValue v[]; };
#endif
#else
#include <mql_compat.h>
#endif

#endif
