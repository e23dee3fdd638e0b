#pragma once
/// @file variant_graphs.hpp
/// @brief One path from plan to replay: measure each branch's requests, plan which frames share
/// memory, reserve it, capture every (chunk, slot, layer, branch) once, and launch by microbatch.
///
/// ```cpp
/// graphpool::cuda_pool_resource pool;
/// graphpool::variant_graphs graphs(pool, {"cp1", "cp2", "cp4", "cp8"});  // one layer, four variants
/// graphs.capture(stream, forward_body, backward_body);                   // measure, plan, reserve, capture
/// graphs.forward(0, graphs.branch("cp4"), stream);                       // microbatch 0 runs cp4
/// graphs.backward(0, graphs.branch("cp4"), stream);
/// ```

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/body_captures.hpp"
#include "graphpool/capture/capture_session.hpp"
#include "graphpool/capture/captured_graphs.hpp"
#include "graphpool/capture/frame_capture.hpp"
#include "graphpool/capture/graph_bank.hpp"
#include "graphpool/capture/microbatch_frames.hpp"
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/capture/variant_options.hpp"
#include "graphpool/capture/variant_plan.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"

namespace graphpool {

/// @brief Variant graphs of a model's layers sharing one planned footprint.
///
/// The flow, in order: measure() runs every branch's forward and backward once in a throw-away
/// capture and records its persistent requests; make_plan() (or use_plan() with a plan made offline
/// by `graphpool-plan --json`) decides every frame's memory; reserve() takes it from the upstream;
/// capture() captures every (chunk, slot, layer, branch) forward and backward once at the planned
/// addresses. capture(stream, forward, backward) does all five. Then forward()/backward() launch a
/// microbatch's graph: its slot comes from the plan's slot map for the schedule of the step
/// (begin_step()), never from the caller.
///
/// The guard (variant_options::guard, on with GRAPHPOOL_SLOT_DEBUG=1) refuses, before anything is
/// enqueued, a forward whose frame overlaps memory a live frame holds and a backward whose forward
/// is not live; a forward whose launch fails gives its claim back.
///
/// `Session` is capture_session; the host tests use a stand-in with the same members.
/// Thread-safety: not thread-safe; one thread at a time. Set-up (measure to capture) runs on one thread;
/// launches go on one stream from one thread at a time (graph memory is shared only among graphs launched
/// on one stream). Const members may run concurrently with each other, never with set-up, begin_step(),
/// a launch or release() (report() reads the launch count they change).
template <class Upstream, class Session = capture_session>
class variant_graphs final {
 public:
  using frame = basic_frame_capture<Session>;                        ///< what a body gets
  using body = typename detail::body_captures<Session>::body;        ///< one layer's forward or backward
  using executable = typename detail::body_captures<Session>::executable;

  /// @brief One chunk of one layer, one microbatch in flight, `branches` as its variants.
  variant_graphs(Upstream& upstream, std::vector<std::string> branches, variant_options options = {})
      : variant_graphs(upstream, variant_model{std::move(branches), {1}, {}}, options) {}

  /// @brief `model`'s branches, chunks, layers and the schedules it will replay.
  /// @throws graphpool::error for a model with no branch, an empty or repeated branch name, or
  /// schedules that disagree with the layer counts.
  variant_graphs(Upstream& upstream, variant_model model, variant_options options = {})
      : one_in_flight_(model.schedules.empty()), model_(detail::checked_model(std::move(model))), options_(options),
        upstream_(upstream), guard_(options.guard, model_.branches), captures_(model_, options_.capture),
        measurement_(detail::empty_measurement(model_)), frames_(model_, one_in_flight_) {}

  variant_graphs(const variant_graphs&) = delete;
  variant_graphs& operator=(const variant_graphs&) = delete;

  /// @return the branch called `name`. @throws graphpool::error naming the branches there are.
  [[nodiscard]] branch_id branch(const std::string& name) const { return detail::find_branch(model_, name); }

  /// @brief Runs every branch's forward (layers in order) then backward (layers in reverse) of each
  /// chunk once in a throw-away capture on `stream`, recording each layer's persistent requests.
  /// The bodies are kept for capture(). Measuring again after reserve() must find the same requests
  /// (the memory was laid out for them); measuring again before it makes reserve() check the plan
  /// against the new requests. @throws graphpool::error naming the chunk, branch and cause, or when the
  /// requests changed since reserve() (call release() and plan again); the earlier bodies and
  /// measurement are kept then.
  void measure(cudaStream_t stream, body forward, body backward) {
    detail::measurement fresh = detail::empty_measurement(model_);
    captures_.measure(stream, std::move(forward), std::move(backward), fresh, [&] {
      if (reserved() && !detail::same_requests(measurement_, fresh)) {
        throw error("variant_graphs::measure: the bodies' persistent requests changed since reserve(), which laid the "
                    "memory out for the earlier ones; call release() and plan again");
      }
    });
    measurement_ = std::move(fresh);
    measured_ = true;
    if (!reserved()) arenas_.reset();  // declared for the earlier requests: reserve() checks the plan and declares anew
  }

  /// @brief Plans the measured sizes over the model's schedules, in process.
  /// @throws graphpool::error before measure(), or what the planner throws.
  const plan::plan& make_plan() {
    require(measured_, "make_plan", "call measure() first");
    plan::problem problem = detail::planning_problem(model_, measurement_);
    problem.rule = options_.rule;
    problem.max_copies = options_.max_copies;
    adopt(plan::make_plan(problem, options_.mode), false);
    return plan_.value();
  }

  /// @brief Uses a plan made elsewhere (e.g. plan::from_json of `graphpool-plan --json`), checked
  /// against the model and the measurement (now, or at reserve() when given before measure()): its
  /// slot maps must serve every schedule of the model with no two frames alive together on the same
  /// bytes (plan::check_replay), and every frame must hold what each branch requests.
  /// @throws graphpool::error when reserved, or naming the schedule and frames, or the frame and
  /// branch, that do not fit.
  void use_plan(plan::plan planned) { adopt(std::move(planned), true); }

  /// @brief Takes the plan's memory from the upstream in one request: the saved-tensor frames at their
  /// planned arenas and offsets, and the returned gradients.
  /// @throws graphpool::error without a plan, or when the upstream fails (nothing is held then).
  void reserve() {
    require(plan_.has_value(), "reserve", "call make_plan() or use_plan() first");
    require(measured_, "reserve", "call measure() first");
    if (!arenas_.has_value()) detail::declare_checked_plan(arenas_, upstream_, plan_.value(), model_, measurement_);
    arenas_->reserve();
  }

  /// @brief Captures every (chunk, slot, layer, branch) forward and backward once, at the planned addresses.
  /// @throws graphpool::error before reserve(), naming the frame, branch and cause when a body throws,
  /// the capture is invalidated or a request differs from the measurement; nothing stays captured then.
  void capture(cudaStream_t stream) {
    require(reserved(), "capture", "call reserve() first");
    graphs_.keep(captures_.capture(stream, *arenas_, plan_.value(), measurement_));
  }

  /// @brief measure(), make_plan() (unless a plan was given with use_plan()), reserve(), capture().
  /// A plan given with use_plan() stays given when this throws.
  void capture(cudaStream_t stream, body forward, body backward) {
    measure(stream, std::move(forward), std::move(backward));
    if (!reserved()) {
      if (!plan_given_) make_plan();
      reserve();  // checks a given plan against the measurement
    }
    capture(stream);
  }

  /// @brief Starts a step of `microbatches` microbatches: launches use that schedule's slot map.
  /// @throws graphpool::error before any plan, or when the plan has no schedule of that many microbatches.
  void begin_step(int microbatches) { frames_.begin_step(microbatches); }

  /// @brief Launches the forward of `layer` of `chunk` for `microbatch` in `branch` on `stream`.
  /// @throws graphpool::error (before anything is enqueued) for an unknown chunk, layer, branch or a
  /// microbatch beyond the step's schedule, a guard violation, or a failed launch.
  void forward(chunk_id chunk, int microbatch, layer_id layer, branch_id branch, cudaStream_t stream) {
    launch(graph_phase::forward, chunk, microbatch, layer, branch, stream);
  }
  /// @brief Launches the backward of `layer` of `chunk` for `microbatch` in `branch`. @throws as forward().
  void backward(chunk_id chunk, int microbatch, layer_id layer, branch_id branch, cudaStream_t stream) {
    launch(graph_phase::backward, chunk, microbatch, layer, branch, stream);
  }
  /// @brief The forwards of every layer of `chunk`, in order.
  void forward(chunk_id chunk, int microbatch, branch_id branch, cudaStream_t stream) {
    for (std::uint32_t l = 0; l < frames_.layers(chunk); ++l) forward(chunk, microbatch, layer_id{l}, branch, stream);
  }
  /// @brief The backwards of every layer of `chunk`, last layer first.
  void backward(chunk_id chunk, int microbatch, branch_id branch, cudaStream_t stream) {
    for (std::uint32_t l = frames_.layers(chunk); l-- > 0;) backward(chunk, microbatch, layer_id{l}, branch, stream);
  }
  /// @brief Every layer's forward of the first chunk (a model of one chunk).
  void forward(int microbatch, branch_id branch, cudaStream_t stream) { forward(chunk_id{0}, microbatch, branch, stream); }
  /// @brief Every layer's backward of the first chunk (a model of one chunk).
  void backward(int microbatch, branch_id branch, cudaStream_t stream) { backward(chunk_id{0}, microbatch, branch, stream); }

  /// @return the slot `microbatch` of `chunk` replays in this step.
  /// @throws graphpool::error as forward().
  [[nodiscard]] slot_id slot(chunk_id chunk, int microbatch) const { return frames_.slot(chunk, microbatch); }

  /// @return output part `index` of `layer` of `chunk` for `microbatch` in `branch` (where a runtime
  /// reads it to send it on, e.g. to the next pipeline stage). @throws graphpool::error before reserve()
  /// or for what forward() refuses.
  [[nodiscard]] void* output(chunk_id chunk, int microbatch, layer_id layer, branch_id branch, std::size_t index) const {
    return frame_view(chunk, microbatch, layer, branch, false).output(index);
  }
  /// @return gradient part `index` that `layer`'s backward of `chunk` returns for `microbatch` in `branch`.
  [[nodiscard]] void* gradient(chunk_id chunk, int microbatch, layer_id layer, branch_id branch, std::size_t index) const {
    return frame_view(chunk, microbatch, layer, branch, true).saved(index);
  }

  [[nodiscard]] const plan::plan& plan() const {
    require(plan_.has_value(), "plan", "call make_plan() or use_plan() first");
    return plan_.value();
  }
  [[nodiscard]] const variant_model& model() const noexcept { return model_; }
  /// @return the reservation's figures (empty before reserve()).
  [[nodiscard]] arena_allocator_statistics statistics() const {
    return arenas_.has_value() ? arenas_->statistics() : arena_allocator_statistics{};
  }
  /// @return true between reserve() and release().
  [[nodiscard]] bool reserved() const noexcept { return arenas_.has_value() && arenas_->reserved(); }
  [[nodiscard]] slot_guard& guard() noexcept { return guard_; }
  /// @return the arenas (views of any frame's memory: frame i's parts are slot 2i, its gradients 2i+1).
  /// @throws graphpool::error while nothing is declared: before reserve(), or after release() and a new
  /// measure(). After release() alone the arenas stay declared, and their views refuse until reserve().
  [[nodiscard]] const arena_allocator<Upstream>& arenas() const {
    require(arenas_.has_value(), "arenas", "call reserve() first");
    return *arenas_;
  }
  /// @return how many graphs capture() made (2 x frames x branches).
  [[nodiscard]] std::size_t graphs() const noexcept { return graphs_.size(); }

  /// @return the device's graph memory counters and this object's launches.
  [[nodiscard]] graph_memory_report report() const { return graphs_.report("variant_graphs::report"); }

  /// @return the plan's figures and the reservation, printable.
  [[nodiscard]] std::string summary() const {
    std::string text = plan_.has_value() ? plan::summary_table(plan_.value()) : std::string("no plan yet\n");
    return text + statistics().summary();
  }

  /// @brief Returns the memory to the upstream and drops the graphs; a new plan may follow.
  void release() noexcept {
    graphs_.clear();
    if (arenas_.has_value()) arenas_->release();
    guard_.reset();
  }

 private:
  [[nodiscard]] branch_view frame_view(chunk_id chunk, int microbatch, layer_id layer, branch_id branch,
                                       bool gradients) const {
    const auto frame = static_cast<std::uint32_t>(frames_.frame(chunk, microbatch, layer, branch));
    return arenas().view(slot_id{2 * frame + (gradients ? 1u : 0u)}, branch);
  }

  void launch(graph_phase phase, chunk_id chunk, int microbatch, layer_id layer, branch_id branch, cudaStream_t stream) {
    const std::size_t frame = frames_.frame(chunk, microbatch, layer, branch);
    if (graphs_.empty()) require(false, to_string(phase), "call capture() first");
    graphs_.launch(captures_.graph_index(frame, branch, phase), phase, frame_label{chunk, microbatch, layer, branch},
                   plan_->frames[frame], guard_, stream);
  }

  // Takes `planned` as the plan; `given`: from use_plan() (kept by capture(stream, forward, backward)),
  // not from make_plan() (made again there from each measurement).
  void adopt(plan::plan planned, bool given) {
    require(!reserved(), given ? "use_plan" : "make_plan", "call release() first to change the plan");
    if (measured_) detail::check_plan(planned, model_, measurement_);
    arenas_.reset();  // a new plan, new declarations
    frames_.forget();  // no frame points into the plan replaced next, even if use() throws
    plan_ = std::move(planned);
    plan_given_ = given;
    frames_.use(plan_.value());
  }

  static void require(bool ok, const std::string& call, const std::string& fix) {
    if (!ok) throw error("variant_graphs::" + call + ": not ready; " + fix);
  }

  bool one_in_flight_;  // no schedule given: every microbatch replays slot 0, one at a time
  variant_model model_;
  variant_options options_;
  Upstream& upstream_;
  std::optional<arena_allocator<Upstream>> arenas_;  // declared from the plan at reserve()
  slot_guard guard_;
  detail::body_captures<Session> captures_;  // the bodies, and the captures that measure and run them
  detail::measurement measurement_;  // [chunk][layer][branch]
  bool measured_ = false;
  std::optional<plan::plan> plan_;
  bool plan_given_ = false;  // plan_ came from use_plan(), not make_plan()
  detail::microbatch_frames frames_;      // the frame of each launch: the step's slot map, ids checked
  detail::captured_graphs<executable> graphs_;  // what capture() made, and their launches
};

}  // namespace graphpool
