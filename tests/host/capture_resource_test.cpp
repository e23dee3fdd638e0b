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
  std::vector<void*> persistent;
  std::uintptr_t next = 0x1000;

  void* allocate_persistent(std::size_t bytes, std::size_t, persistent_kind kind) {
    if (bytes == 0) return nullptr;
    calls.push_back(std::string(kind == persistent_kind::output ? "output " : "saved ") + std::to_string(bytes));
    persistent.push_back(reinterpret_cast<void*>(next += 0x100));
    return persistent.back();
  }
  bool owns_persistent(const void* ptr) const {
    for (void* p : persistent) {
      if (p == ptr) return true;
    }
    return false;
  }
  void* allocate_transient(std::size_t bytes, std::size_t) {
    if (bytes == 0) return nullptr;
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

TEST_CASE("the plug-in refuses to free a pointer it did not hand out, or twice, and takes zero bytes as nullptr",
          "[capture][plugin]") {
  stand_in_session session;
  resource plug(session);
  void* workspace = plug.allocate(session.capture_stream, 64);
  plug.deallocate(session.capture_stream, workspace, 64);
  CHECK_THROWS_WITH(plug.deallocate(session.capture_stream, workspace, 64),
                    contains_text("(64 bytes), which is neither a live transient nor persistent memory of this capture: "
                                  "a double free"));
  int foreign = 0;
  CHECK_THROWS_WITH(plug.deallocate(session.capture_stream, &foreign, 4), contains_text("capture of slot 's' branch 'b': "
                                                                                         "deallocate of 0x"));
  CHECK(plug.allocate(session.capture_stream, 0) == nullptr);
  plug.deallocate(session.capture_stream, nullptr, 0);  // nothing to do
  resource::persistent_scope saved(plug);
  void* activation = plug.allocate(session.capture_stream, 128);
  plug.deallocate(session.capture_stream, activation, 128);  // persistent: the arena keeps it
  CHECK(plug.allocate(session.capture_stream, 0) == nullptr);
  CHECK(session.calls == std::vector<std::string>{"transient 64", "free", "saved 128"});
}
