// The common case of transaction pooling costs no allocation: a client whose
// parameters equal the backend's attaches and detaches, and ordinary DML
// passes the statement pre-filter, without one call to operator new.
// Sanitizer builds replace operator new themselves; there the test skips.
#include <cstdlib>
#include <new>

#include "adapters/proxy/session_params.h"
#include "gtest/gtest.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCountable = false;
#else
constexpr bool kCountable = true;
#endif

namespace {
thread_local long t_news = -1;  // counting when >= 0
}  // namespace

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
void* operator new(std::size_t n) {
  if (t_news >= 0) ++t_news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace corral {
namespace proxy {
namespace {

TEST(SessionParamsAllocTest, EqualStateAttachDetachAndDmlDoNotAllocate) {
  if (!kCountable) GTEST_SKIP() << "sanitizer build: operator new not countable";
  const ParamList server = {{"client_encoding", "UTF8"}, {"DateStyle", "ISO, MDY"}, {"TimeZone", "Etc/UTC"}};
  BackendSession b(server);
  ClientSession c(7);
  c.SetStartupParameter("client_encoding", "UTF8");
  c.SetStartupParameter("extra_float_digits", "2");
  c.LoginParameterStatus(server);
  ASSERT_FALSE(c.OnStatement("SET search_path = app, public").has_value());
  c.OnCommandComplete("SET");
  c.OnReadyForQuery('I');
  ASSERT_FALSE(AttachSql(&c, &b).empty());  // first time: brings b to c
  DetachSession(&c, &b);

  t_news = 0;
  bool all_empty = true;
  for (int i = 0; i < 100; ++i) {
    all_empty &= AttachSql(&c, &b).empty();
    all_empty &= !StatementMayChangeSession("UPDATE stock SET s_quantity = 6 WHERE s_i_id = 2 AND s_w_id = 5");
    all_empty &= !c.OnStatement("SELECT c_balance FROM customer WHERE c_id = 3").has_value();
    c.OnCommandComplete("SELECT 1");
    c.OnReadyForQuery('I');
    DetachSession(&c, &b);
  }
  const long news = t_news;
  t_news = -1;
  EXPECT_TRUE(all_empty);
  EXPECT_EQ(news, 0);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
