// comm/shm/slot_pool.h — what lets the shm transport post an op without allocating: a free
// list of fixed-size slots and a growable FIFO of pointers. Both reach a high-water mark in the
// first iterations and are then reused, so the timed loop never calls malloc (gloo sets its
// buffers up in the constructor for the same reason). Neither is thread-safe: a transport, and
// so its pools and queues, belongs to one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tpb {

class SlotPool {
 public:
  // A pool of slots of `payloadBytes` each, owned through release(): a slot still out when
  // its owner goes (a request destroyed after its transport) frees the pool on its return.
  static SlotPool* create(std::size_t payloadBytes) { return new SlotPool(payloadBytes); }
  void release() {
    released_ = true;
    if (outstanding_ == 0) delete this;
  }

  void* take() {
    if (!free_) grow();
    Slot* s = free_;
    free_ = s->next;
    s->pool = this;
    ++outstanding_;
    return reinterpret_cast<char*>(s) + kHeader;
  }

  // Returns a payload pointer obtained from take() of any pool.
  static void give(void* payload) {
    Slot* s = reinterpret_cast<Slot*>(static_cast<char*>(payload) - kHeader);
    SlotPool* pool = s->pool;
    s->next = pool->free_;
    pool->free_ = s;
    if (--pool->outstanding_ == 0 && pool->released_) delete pool;
  }

  std::size_t slots() const { return blocks_.size() * kPerBlock; }

 private:
  struct Slot {
    SlotPool* pool;  // while taken: where it goes back to
    Slot* next;      // while free: the next free slot
  };
  static constexpr std::size_t kAlign = alignof(std::max_align_t);
  static constexpr std::size_t kHeader = (sizeof(Slot) + kAlign - 1) / kAlign * kAlign;
  static constexpr std::size_t kPerBlock = 64;

  explicit SlotPool(std::size_t payloadBytes)
      : slotBytes_(kHeader + (payloadBytes + kAlign - 1) / kAlign * kAlign) {}

  void grow() {
    // operator new[] aligns to max_align_t, and every slot size is a multiple of it.
    blocks_.push_back(std::make_unique<char[]>(slotBytes_ * kPerBlock));
    char* base = blocks_.back().get();
    for (std::size_t i = kPerBlock; i-- > 0;) {
      Slot* s = reinterpret_cast<Slot*>(base + i * slotBytes_);
      s->next = free_;
      free_ = s;
    }
  }

  std::size_t slotBytes_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  Slot* free_ = nullptr;
  std::size_t outstanding_ = 0;
  bool released_ = false;
};

// FIFO of pointers in a power-of-two ring that doubles when full and never shrinks.
template <typename T>
class PtrQueue {
 public:
  PtrQueue() : ring_(16) {}
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }
  T* front() const { return ring_[head_]; }
  void pop() {
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
  }
  void push(T* p) {
    if (count_ == ring_.size()) {
      std::vector<T*> bigger(ring_.size() * 2);
      for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
      ring_.swap(bigger);
      head_ = 0;
    }
    ring_[(head_ + count_) & (ring_.size() - 1)] = p;
    ++count_;
  }

 private:
  std::vector<T*> ring_;
  std::size_t head_ = 0, count_ = 0;
};

}  // namespace tpb
