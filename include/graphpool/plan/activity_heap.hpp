#pragma once
/// @file activity_heap.hpp
/// @brief Which open choice the conflict-driven search (learned_layout.hpp) takes next: choices ordered by
/// activity, which grows each time a choice takes part in a conflict, by a step that itself grows (recent
/// conflicts weigh more), the way SAT solvers order their variables. Host-only: no CUDA header.

#include <cstddef>
#include <utility>
#include <vector>

namespace graphpool::plan::detail {

/// A binary max-heap of choices 0..n-1 by activity.
class activity_heap {
 public:
  /// `activity`: each choice's first activity; every choice in the heap, in order.
  void reset(std::vector<double> activity) {
    activity_ = std::move(activity);
    step_ = 1.0;
    heap_.clear();
    at_.assign(activity_.size(), -1);
    for (std::size_t choice = 0; choice < activity_.size(); ++choice) push(static_cast<int>(choice));
  }

  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] bool contains(int choice) const { return at_[static_cast<std::size_t>(choice)] >= 0; }

  void push(int choice) {
    at_[static_cast<std::size_t>(choice)] = static_cast<int>(heap_.size());
    heap_.push_back(choice);
    rise(at_[static_cast<std::size_t>(choice)]);
  }
  /// Takes out the most active choice.
  int pop() {
    const int top = heap_.front();
    at_[static_cast<std::size_t>(top)] = -1;
    const int last = heap_.back();
    heap_.pop_back();
    if (heap_.empty()) return top;
    std::size_t i = 0;
    for (std::size_t child; (child = 2 * i + 1) < heap_.size(); i = child) {
      if (child + 1 < heap_.size() && more_active(heap_[child + 1], heap_[child])) ++child;
      if (!more_active(heap_[child], last)) break;
      place(i, heap_[child]);
    }
    place(i, last);
    return top;
  }

  /// A choice took part in a conflict: its activity grows by the step.
  void bump(int choice) {
    activity_[static_cast<std::size_t>(choice)] += step_;
    if (contains(choice)) rise(at_[static_cast<std::size_t>(choice)]);
  }
  /// After each conflict: later bumps weigh 5% more.
  void grow_step() { step_ *= 1.05; }
  /// Scales every activity down where the step grows past what a double keeps apart (the order stays).
  void rescale() {
    if (step_ <= 1e100) return;
    for (double& a : activity_) a *= 1e-100;
    step_ *= 1e-100;
  }

 private:
  [[nodiscard]] bool more_active(int a, int b) const {
    return activity_[static_cast<std::size_t>(a)] > activity_[static_cast<std::size_t>(b)];
  }
  void rise(int at) {
    auto i = static_cast<std::size_t>(at);
    const int choice = heap_[i];
    for (; i > 0 && more_active(choice, heap_[(i - 1) / 2]); i = (i - 1) / 2) place(i, heap_[(i - 1) / 2]);
    place(i, choice);
  }
  void place(std::size_t i, int choice) {
    heap_[i] = choice;
    at_[static_cast<std::size_t>(choice)] = static_cast<int>(i);
  }

  std::vector<double> activity_;
  double step_ = 1.0;
  std::vector<int> heap_;  // choices, the most active first
  std::vector<int> at_;    // per choice: its place in heap_ (-1: not in it)
};

}  // namespace graphpool::plan::detail
