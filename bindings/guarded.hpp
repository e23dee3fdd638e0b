#pragma once
// The C ABI's error convention, shared by every exported call: run a C++ call, turn an exception into
// GRAPHPOOL_ERROR and keep its message for graphpool_last_error() (per thread).

#include <exception>
#include <string>

#include "graphpool/c_api.h"

namespace graphpool::bindings {

/// @return this thread's last error message ("" after a call that succeeded).
inline std::string& last_error() {
  thread_local std::string message;
  return message;
}

/// @brief Runs `call`; GRAPHPOOL_OK when it returns, GRAPHPOOL_ERROR (message kept) when it throws.
template <class Call>
graphpool_status guarded(Call&& call) noexcept {
  try {
    call();
    last_error().clear();
    return GRAPHPOOL_OK;
  } catch (const std::exception& e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "unknown error";
  }
  return GRAPHPOOL_ERROR;
}

}  // namespace graphpool::bindings
