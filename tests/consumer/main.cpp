// Uses the installed headers: two branches of one slot on host memory; and the installed C library.
#include <graphpool/c_api.h>

#include <graphpool/graphpool.hpp>

#include <cstdio>
#include <cstring>

int main() {
  graphpool::host_resource host;
  graphpool::arena_allocator<graphpool::host_resource> arenas(host);
  const auto slot = arenas.declare_slot("slot");
  const auto a = arenas.declare_branch(slot, "a", {{}, {graphpool::part(1 << 20)}});
  const auto b = arenas.declare_branch(slot, "b", {{}, {graphpool::part(1 << 19)}});
  arenas.reserve();
  const bool shared = arenas.view(slot, a).saved(0) == arenas.view(slot, b).saved(0);
  std::printf("consumer: %s", arenas.statistics().summary().c_str());
  // The C library links and answers: a null resource is an error with a message.
  const bool c_api = graphpool_pop_persistent(nullptr) == GRAPHPOOL_ERROR && std::strlen(graphpool_last_error()) > 0;
  std::printf("consumer: graphpool_pop_persistent(NULL) -> \"%s\"\n", graphpool_last_error());
  return shared && c_api && arenas.statistics().reserved_bytes == (1u << 20) ? 0 : 1;
}
