// libstdc++'s shared_ptr (<memory>, <future>, <condition_variable>, <thread>'s users, <regex>, ...)
// spells __attribute__((__noinline__)), which the runtime's __noinline__ macro breaks: code that
// includes one of them after the runtime (cudaperf/config.h pre-includes few standard headers,
// none of these) reads it with the macro hidden.
#pragma push_macro("__noinline__")
#undef __noinline__
#include_next <bits/shared_ptr_base.h>
#pragma pop_macro("__noinline__")
