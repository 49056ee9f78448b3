// Checks that a cache hit producing RefIds allocates nothing once the
// thread's scratch is warm. Counts global operator new calls on this thread;
// sanitizer builds replace operator new themselves, so there the test skips.
#include <atomic>
#include <cstdlib>
#include <new>

#include "gtest/gtest.h"
#include "policies/ref_extractor.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CORRAL_COUNT_ALLOCS 0
#else
#define CORRAL_COUNT_ALLOCS 1
#endif

namespace {
thread_local bool g_counting = false;
thread_local long g_allocs = 0;
}  // namespace

#if CORRAL_COUNT_ALLOCS
void* operator new(std::size_t n) {
  if (g_counting) ++g_allocs;
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace corral {
namespace {

TEST(RefExtractorAlloc, CacheHitForIdsDoesNotAllocate) {
  if (!CORRAL_COUNT_ALLOCS) GTEST_SKIP() << "sanitizer build: operator new not countable";
  SchemaBuilder b;
  ASSERT_TRUE(b.AddDdl("CREATE TABLE warehouse (w_id int PRIMARY KEY);"
                       "CREATE TABLE item (i_id int PRIMARY KEY);"
                       "CREATE TABLE stock (s_i_id int REFERENCES item, s_w_id int REFERENCES warehouse,"
                       " s_quantity int, s_data varchar(50));")
                  .ok());
  RefExtractor ex(*b.Build());
  const char* warm = "UPDATE stock SET s_quantity = 6, s_data = 'it''s' WHERE s_i_id = 2 AND s_w_id = 5";
  const char* other = "UPDATE stock SET s_quantity = 91, s_data = 'o''k' WHERE s_i_id = 4402 AND s_w_id = 17";
  for (ExtractionPolicy p : {ExtractionPolicy{RefNaming::kLiteral, RefGrouping::kSingle},
                             ExtractionPolicy{RefNaming::kCanonical, RefGrouping::kAll}}) {
    RefVec ids;
    ASSERT_TRUE(ex.Extract(warm, p, &ids).ok());  // compiles the shape, warms the scratch
    ids.clear();
    ASSERT_TRUE(ex.Extract(other, p, &ids).ok());
    ids.clear();
    g_allocs = 0;
    g_counting = true;
    absl::Status st = ex.Extract(other, p, &ids);
    ParamValue params[] = {{"7"}};
    RefVec ids2;
    absl::Status st2 = ex.Extract("SELECT * FROM stock WHERE s_w_id = $1", p, ParamSpan(params, 1), &ids2);
    g_counting = false;
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_FALSE(ids.empty());
    long first = g_allocs;
    // The parameter statement was a miss the first time; run it again warm.
    ids2.clear();
    g_allocs = 0;
    g_counting = true;
    st2 = ex.Extract("SELECT * FROM stock WHERE s_w_id = $1", p, ParamSpan(params, 1), &ids2);
    g_counting = false;
    EXPECT_TRUE(st2.ok());
    EXPECT_EQ(ids2.size(), 1u);
    EXPECT_EQ(g_allocs, 0);
    // `first` includes one miss (libpg_query + compile) for the parameter
    // shape: proof that the counter sees allocations at all.
    if (p.grouping == RefGrouping::kSingle) EXPECT_GT(first, 0);
    ids.clear();
    g_allocs = 0;
    g_counting = true;
    st = ex.Extract(other, p, &ids);
    g_counting = false;
    EXPECT_EQ(g_allocs, 0) << "allocations on a cache hit";
    EXPECT_FALSE(ids.empty());
  }
}

}  // namespace
}  // namespace corral
