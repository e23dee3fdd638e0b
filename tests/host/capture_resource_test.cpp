// The plug-in's routing: transient by default, persistent inside a scope (a stand-in session, no GPU).

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/capture/capture_resource.hpp"

using graphpool::persistent_kind;
using graphpool::testing::contains_text;

namespace {

// Records what the resource asked of it; hands out distinct fake addresses.
struct stand_in_session {
  cudaStream_t capture_stream = reinterpret_cast<cudaStream_t>(0x10);
  std::vector<std::string> calls;
  std::vector<void*> live;
  std::uintptr_t next = 0x1000;

  void* allocate_persistent(std::size_t bytes, std::size_t, persistent_kind kind) {
    calls.push_back(std::string(kind == persistent_kind::output ? "output " : "saved ") + std::to_string(bytes));
    return reinterpret_cast<void*>(next += 0x100);
  }
  void* allocate_transient(std::size_t bytes, std::size_t) {
    calls.push_back("transient " + std::to_string(bytes));
    live.push_back(reinterpret_cast<void*>(next += 0x100));
    return live.back();
  }
  bool owns_transient(const void* ptr) const {
    for (void* p : live) {
      if (p == ptr) return true;
    }
    return false;
  }
  void free_transient(void* ptr) {
    calls.push_back("free");
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (live[i] == ptr) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  cudaStream_t stream() const { return capture_stream; }
  std::string where() const { return "capture of slot 's' branch 'b'"; }
};

using resource = graphpool::basic_capture_resource<stand_in_session>;

}  // namespace

TEST_CASE("requests are transient unless a persistent scope is alive", "[capture][plugin]") {
  stand_in_session session;
  resource plug(session);
  void* workspace = plug.allocate(session.capture_stream, 100);
  {
    resource::persistent_scope saved(plug);
    CHECK(plug.persistent());
    void* activation = plug.allocate(session.capture_stream, 200);
    {
      resource::persistent_scope output(plug, persistent_kind::output);
      static_cast<void>(plug.allocate(session.capture_stream, 300));
    }
    static_cast<void>(plug.allocate_sync(400));
    plug.deallocate(session.capture_stream, activation, 200);  // persistent: the arena keeps it
  }
  CHECK_FALSE(plug.persistent());
  plug.deallocate(session.capture_stream, workspace, 100);
  plug.pop_persistent();  // outside any scope: nothing to leave
  CHECK(session.calls == std::vector<std::string>{"transient 100", "saved 200", "output 300", "saved 400", "free"});
  CHECK(session.live.empty());
}

TEST_CASE("the plug-in refuses another stream than the capture's", "[capture][plugin]") {
  stand_in_session session;
  resource plug(session);
  CHECK_THROWS_WITH(plug.allocate(reinterpret_cast<cudaStream_t>(0x20), 8),
                    contains_text("capture of slot 's' branch 'b': allocate on a stream other than the capture stream"));
  CHECK(session.calls.empty());
}
