// The one main of the host suite, for Catch2 2.x and 3.x alike.
#if GRAPHPOOL_CATCH_MAJOR < 3
#define CATCH_CONFIG_RUNNER
#endif
#include "catch.hpp"

int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }
