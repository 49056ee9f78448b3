// Checks that a cache hit producing RefIds allocates nothing once the
// thread's scratch is warm. Counts global operator new calls on this thread;
// sanitizer builds replace operator new themselves, so there the test skips.
#include <atomic>
#include <cstdlib>
#include <new>

#include "gtest/gtest.h"
#include "policies/pg_params.h"
#include "policies/ref_extractor.h"
#include "policies/ref_extractor_testing.h"

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
  RefExtractor ex(testing_refs::SchemaFrom(
      "CREATE TABLE warehouse (w_id int PRIMARY KEY);"
      "CREATE TABLE item (i_id int PRIMARY KEY);"
      "CREATE TABLE stock (s_i_id int REFERENCES item, s_w_id int REFERENCES warehouse,"
      " s_quantity int, s_data varchar(50));"));
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

// The ANY / OR shapes and typed array parameters keep the hit path
// allocation-free too, as does decoding a Bind into reused BoundParams.
TEST(RefExtractorAlloc, AnyOrAndTypedParamsDoNotAllocateWhenWarm) {
  if (!CORRAL_COUNT_ALLOCS) GTEST_SKIP() << "sanitizer build: operator new not countable";
  RefExtractor ex(testing_refs::SchemaFrom("CREATE TABLE stock (s_i_id int, s_w_id int, s_data varchar(50));"));
  const char* any = "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2)";
  const char* lit = "SELECT * FROM stock WHERE s_w_id = 3 AND (s_i_id = 1 OR s_i_id = ANY(ARRAY[4, 5]))";
  // int4 5 and int4[] {1,NULL,2} in binary wire format.
  const std::string five("\0\0\0\5", 4);
  const std::string arr("\0\0\0\1" "\0\0\0\1" "\0\0\0\x17" "\0\0\0\3" "\0\0\0\1"
                        "\0\0\0\4" "\0\0\0\1" "\xff\xff\xff\xff" "\0\0\0\4" "\0\0\0\2",
                        40);
  const uint32_t oids[] = {pgoid::kInt4, pgoid::kInt4Array};
  ParamValue text_params[] = {{"5"}, {"{1,\"2\",3}"}};
  // The same two values in a Bind message body (portal "", statement "s",
  // one format code: binary; no result format codes).
  const std::string bind = std::string("\0s\0\0\1\0\1\0\2", 9) + std::string("\0\0\0\4", 4) + five +
                           std::string("\0\0\0\x28", 4) + arr + std::string("\0\0", 2);
  BindMessage msg;
  BoundParams bound;
  RefVec ids;
  ids.reserve(64);
  for (ExtractionPolicy p : {ExtractionPolicy{RefNaming::kLiteral, RefGrouping::kSingle},
                             ExtractionPolicy{RefNaming::kCanonical, RefGrouping::kAll}}) {
    for (int round = 0; round < 2; ++round) {
      g_allocs = 0;
      g_counting = round == 1;
      absl::Status m = ParseBindMessage(bind, &msg);
      absl::Status d = bound.Decode(oids, msg.param_formats, msg.values);
      ids.clear();
      absl::Status s1 = ex.Extract(any, p, bound.params(), &ids);
      const size_t typed = ids.size();
      ids.clear();
      absl::Status s2 = ex.Extract(any, p, ParamSpan(text_params, 2), &ids);
      const size_t text = ids.size();
      ids.clear();
      absl::Status s3 = ex.Extract(lit, p, &ids);
      const size_t literal = ids.size();
      g_counting = false;
      ASSERT_TRUE(m.ok() && d.ok() && s1.ok() && s2.ok() && s3.ok()) << m << d;
      ASSERT_EQ(msg.values.size(), 2u);
      EXPECT_EQ(msg.values[1].bytes, arr);
      EXPECT_EQ(bound.undecodable(), 0);
      EXPECT_EQ(typed, p.grouping == RefGrouping::kSingle ? 3u : 2u);
      EXPECT_EQ(text, p.grouping == RefGrouping::kSingle ? 4u : 3u);
      EXPECT_EQ(literal, p.grouping == RefGrouping::kSingle ? 4u : 3u);
      if (round == 1) {
        EXPECT_EQ(g_allocs, 0) << "allocations on a warm ANY/OR hit or Bind decode";
      }
    }
  }
}

// Texts into a reused RefTexts (what the proxy's router keeps per
// transaction) allocate nothing once it has held a transaction's texts; the
// same texts as a vector of strings, one allocation each.
TEST(RefExtractorAlloc, TextsIntoAWarmRefTextsDoNotAllocate) {
  if (!CORRAL_COUNT_ALLOCS) GTEST_SKIP() << "sanitizer build: operator new not countable";
  RefExtractor ex(
      testing_refs::SchemaFrom("CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int);"));
  const char* q1 = "SELECT abalance FROM pgbench_accounts WHERE aid = 123456789 AND bid = 42";
  const char* q2 = "SELECT abalance FROM pgbench_accounts WHERE aid = 987654321 AND bid = 24";
  for (ExtractionPolicy p : {testing_refs::kCanSingle, testing_refs::kCanAll}) {
    RefVec ids;
    ids.reserve(16);
    RefTexts texts;
    ASSERT_TRUE(ex.Extract(q1, p, ParamSpan(), &ids, nullptr, &texts).ok());  // warms cache and buffer
    const std::vector<std::string> first = texts.ToVector();
    ids.clear();
    texts.clear();
    g_allocs = 0;
    g_counting = true;
    absl::Status st = ex.Extract(q2, p, ParamSpan(), &ids, nullptr, &texts);
    g_counting = false;
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(g_allocs, 0) << "allocations making texts into a warm RefTexts";
    ASSERT_EQ(texts.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], RefId::Of(texts[i])) << texts[i];
    if (p.grouping == RefGrouping::kSingle) {
      EXPECT_EQ(texts.ToVector(), (std::vector<std::string>{"aid=987654321", "bid=24"}));
      EXPECT_EQ(first, (std::vector<std::string>{"aid=123456789", "bid=42"}));
    } else {
      EXPECT_EQ(texts.ToVector(), std::vector<std::string>{"aid=987654321 AND bid=24"});
    }
    // The vector form gives the same texts (and allocates, which is why the
    // proxy does not use it).
    std::vector<std::string> vec;
    ids.clear();
    ASSERT_TRUE(ex.Extract(q2, p, ParamSpan(), &ids, nullptr, &vec).ok());
    EXPECT_EQ(vec, texts.ToVector());
  }
}

}  // namespace
}  // namespace corral
