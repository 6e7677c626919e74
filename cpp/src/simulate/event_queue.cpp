// The rare operations of the event queues (event_queue.hpp): the automatic
// choice between the heap and the time buckets. It never changes the order
// of events, only where they wait.
#include "wafercoll/simulate/event_queue.hpp"

namespace wafercoll::sim {

// One step of the trial, called every next_check_ pushes. The steps: decide
// whether a trial is worth it (0), switch to the other queue after timing
// the current one (1), keep the faster and schedule the next check (2).
void EventQueue::adapt() {
  const auto now = Clock::now();
  switch (trial_step_++) {
    case 0: {  // time the current queue, unless the trial is not needed
      // Grouped, with 7 in 8 pushes since the last check joining a time
      // already queued: the buckets win (a wafer's whole cycles: over 99 %;
      // a clocked NoC's fractional packet times: 50-85 %, where the heap
      // can be twice as fast). Or more events queued than a trial window
      // pushes: moving them would cost more than the trial.
      const std::int64_t fresh = bucket_queue_.fresh_times();
      const bool shared = buckets_ && 8 * (fresh - fresh_mark_) < pushes_ - push_mark_;
      fresh_mark_ = fresh;
      push_mark_ = pushes_;
      if (shared || size() > static_cast<std::size_t>(kTrial)) {
        trial_step_ = 0;
        next_check_ = pushes_ * kGrowth;
        return;
      }
      next_check_ += kTrial;
      break;
    }
    case 1:  // then the other
      (buckets_ ? bucket_s_ : heap_s_) = std::chrono::duration<double>(now - mark_).count();
      buckets_ ? to_heap() : to_buckets();
      next_check_ += kTrial;
      break;
    default: {  // keep the faster; try again later
      (buckets_ ? bucket_s_ : heap_s_) = std::chrono::duration<double>(now - mark_).count();
      const bool heap_wins = heap_s_ * kHeapMargin <= bucket_s_;
      if (heap_wins && buckets_) to_heap();
      if (!heap_wins && !buckets_) to_buckets();
      trial_step_ = 0;
      next_check_ = pushes_ * kGrowth;
      return;
    }
  }
  mark_ = Clock::now();
}

namespace {

// Moves every event, in order, and frees the emptied queue's storage.
template <typename From, typename To>
void move_all(From& from, To& to) {
  while (!from.empty()) {
    to.push(from.top());
    from.pop();
  }
  from.release();
}

}  // namespace

void EventQueue::to_heap() {
  move_all(bucket_queue_, heap_);
  buckets_ = false;
}

void EventQueue::to_buckets() {
  move_all(heap_, bucket_queue_);
  buckets_ = true;
}

}  // namespace wafercoll::sim
