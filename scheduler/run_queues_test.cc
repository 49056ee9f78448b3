#include "scheduler/run_queues.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

std::unique_ptr<Txn> T(int type) {
  auto t = std::make_unique<Txn>();
  t->type = TxnTypeId(type);
  return t;
}

std::unique_ptr<RunQueues> Make(int n, bool stealing, size_t cap = 0) {
  RunQueues::Options o;
  o.num_queues = n;
  o.stealing = stealing;
  o.capacity = cap;
  return RunQueues::Create(o).value();
}

TEST(RunQueuesTest, FifoPerQueue) {
  auto rq = Make(2, false);
  ASSERT_TRUE(rq->Push(QueueId(0), T(1)).ok());
  ASSERT_TRUE(rq->Push(QueueId(0), T(2)).ok());
  ASSERT_TRUE(rq->Push(QueueId(1), T(3)).ok());
  bool stolen;
  EXPECT_EQ(rq->TryPop(0, &stolen)->type.value(), 1);
  EXPECT_EQ(rq->TryPop(0, &stolen)->type.value(), 2);
  EXPECT_EQ(rq->TryPop(0, &stolen), nullptr);  // no stealing
  EXPECT_EQ(rq->Size(QueueId(1)), 1);
  EXPECT_FALSE(rq->Push(QueueId(2), T(0)).ok());
  EXPECT_FALSE(RunQueues::Create({0}).ok());
}

TEST(RunQueuesTest, StealsOldestOfAnotherQueue) {
  auto rq = Make(3, true);
  ASSERT_TRUE(rq->Push(QueueId(2), T(7)).ok());
  ASSERT_TRUE(rq->Push(QueueId(2), T(8)).ok());
  bool stolen = false;
  auto t = rq->TryPop(0, &stolen);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(stolen);
  EXPECT_EQ(t->type.value(), 7);
  rq->SetStealing(false);
  EXPECT_EQ(rq->TryPop(0, &stolen), nullptr);
  EXPECT_EQ(rq->TotalSize(), 1);
}

TEST(RunQueuesTest, CapacityRejects) {
  auto rq = Make(1, false, 2);
  EXPECT_TRUE(rq->Push(QueueId(0), T(0)).ok());
  EXPECT_TRUE(rq->Push(QueueId(0), T(0)).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(rq->Push(QueueId(0), T(0))));
}

TEST(RunQueuesTest, BlockingPopWakesOnPushAndDrainsOnShutdown) {
  auto rq = Make(2, false);
  std::atomic<int> got{0};
  std::thread w([&] {
    bool stolen;
    while (auto t = rq->Pop(1, &stolen)) got.fetch_add(t->type.value());
  });
  ASSERT_TRUE(rq->Push(QueueId(1), T(5)).ok());
  while (got.load() != 5) std::this_thread::yield();
  ASSERT_TRUE(rq->Push(QueueId(1), T(6)).ok());
  rq->Shutdown();
  w.join();
  EXPECT_EQ(got.load(), 11);
  EXPECT_TRUE(absl::IsFailedPrecondition(rq->Push(QueueId(1), T(0))));
}

TEST(RunQueuesTest, IdleWorkerStealsFromBusyQueue) {
  auto rq = Make(2, true);
  std::atomic<int> stolen_count{0}, done{0};
  std::thread w([&] {
    bool stolen;
    while (auto t = rq->Pop(0, &stolen)) {
      stolen_count += stolen;
      ++done;
    }
  });
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(rq->Push(QueueId(1), T(i)).ok());
  rq->Shutdown();
  w.join();
  EXPECT_EQ(done.load(), 100);
  EXPECT_EQ(stolen_count.load(), 100);
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
