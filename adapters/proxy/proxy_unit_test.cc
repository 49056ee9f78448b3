// Unit tests of the proxy's pieces that need no server: framing, the
// messages it writes, md5, the userlist and config parsers, the stealing
// rule.
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/steal.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {
namespace {

TEST(Wire, FramesSplitAndRejectBadLengths) {
  std::string buf;
  wire::AppendCommandComplete(&buf, "SELECT 1");
  wire::AppendReadyForQuery(&buf, 'T');
  wire::Frame f;
  size_t used = 0;
  ASSERT_TRUE(wire::NextFrame(buf, 1 << 20, &f, &used).ok());
  EXPECT_EQ(f.type, 'C');
  EXPECT_EQ(std::string(f.body), std::string("SELECT 1\0", 9));
  ASSERT_TRUE(wire::NextFrame(absl::string_view(buf).substr(used), 1 << 20, &f, &used).ok());
  EXPECT_EQ(f.type, 'Z');
  EXPECT_EQ(f.body, "T");
  // Incomplete: asks for more.
  ASSERT_TRUE(wire::NextFrame(absl::string_view(buf).substr(0, 7), 1 << 20, &f, &used).ok());
  EXPECT_EQ(used, 0u);
  // Length above the limit and below 4.
  std::string big = "Q";
  wire::PutInt32(&big, 0x7fffffff);
  EXPECT_FALSE(wire::NextFrame(big, 1 << 20, &f, &used).ok());
  std::string tiny = "Q";
  wire::PutInt32(&tiny, 2);
  EXPECT_FALSE(wire::NextFrame(tiny, 1 << 20, &f, &used).ok());
}

TEST(Wire, AppendBindRenamesTheStatementAndKeepsTheRest) {
  const std::string rest("\0\0\0\x01\0\0\0\x01" "7\0\0", 11);  // formats, one value "7", results
  std::string buf;
  wire::AppendBind(&buf, "p1", "corral_s3", rest);
  wire::Frame f;
  size_t used = 0;
  ASSERT_TRUE(wire::NextFrame(buf, 1 << 20, &f, &used).ok());
  EXPECT_EQ(used, buf.size());
  EXPECT_EQ(f.type, 'B');
  wire::Reader r(f.body);
  EXPECT_EQ(r.CString(), "p1");
  EXPECT_EQ(r.CString(), "corral_s3");
  EXPECT_EQ(std::string(r.rest()), rest);
}

TEST(Wire, ErrorFieldsRoundTrip) {
  std::string buf;
  wire::AppendError(&buf, "ERROR", "40001", "could not serialize", "detail here");
  wire::Frame f;
  size_t used = 0;
  ASSERT_TRUE(wire::NextFrame(buf, 1 << 20, &f, &used).ok());
  auto fields = wire::ParseErrorFields(f.body);
  EXPECT_EQ(fields['C'], "40001");
  EXPECT_EQ(fields['M'], "could not serialize");
  EXPECT_EQ(fields['D'], "detail here");
  EXPECT_EQ(wire::ErrorSqlState(f.body), "40001");
  EXPECT_TRUE(wire::IsFrontendType('Q'));
  EXPECT_FALSE(wire::IsFrontendType('Z'));
}

TEST(Auth, Md5MatchesPostgres) {
  // SELECT 'md5' || md5('secret' || 'alice') in PostgreSQL.
  // Values from PostgreSQL: SELECT md5('secretalice'), md5(md5('secretalice') || 'abcd').
  const std::string inner = auth::Md5Hex("secretalice");
  EXPECT_EQ(inner, "4a0a68b43b6cd5cf266fa02f196e2371");
  EXPECT_EQ(auth::Md5Response("alice", "secret", "abcd"), "md5c90bcafc0a2b54511742383e34d5dc9d");
  EXPECT_EQ(inner.size(), 32u);
  EXPECT_EQ(auth::Md5Response("alice", "secret", "abcd"), "md5" + auth::Md5Hex(inner + "abcd"));
  // A stored md5 password gives the same response as its plain text.
  EXPECT_EQ(auth::Md5Response("alice", "md5" + inner, "abcd"), auth::Md5Response("alice", "secret", "abcd"));
  EXPECT_EQ(auth::Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(Auth, UserList) {
  auto u = auth::ParseUserList("; comment\n\"alice\" \"se\"\"cret\"\n\n\"bob\" \"pw\"\n");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->at("alice"), "se\"cret");
  EXPECT_EQ(u->at("bob"), "pw");
  auto bad = auth::ParseUserList("\"alice\" \"x\"\nbob pw\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), absl::string_view::npos) << bad.status();
}

TEST(Config, ParsesKeysAndNamesBadLines) {
  Options o;
  ASSERT_TRUE(ParseConfigText("[corral]\nlisten_port = 7000\npool_size=3 \n; c\n"
                              "server_conninfo = host=10.0.0.1 port=5433 user=u dbname=d\n"
                              "policy = original\nquery_wait_timeout = 5\nstealing = off\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_EQ(o.listen_port, 7000);
  EXPECT_EQ(o.pool_size, 3);
  EXPECT_EQ(o.server_host, "10.0.0.1");
  EXPECT_EQ(o.server_port, 5433);
  EXPECT_EQ(o.server_user, "u");
  EXPECT_EQ(o.server_dbname, "d");
  EXPECT_EQ(PolicyName(o.policy), "original");
  EXPECT_EQ(o.query_wait_timeout_ms, 5000);
  EXPECT_FALSE(o.stealing);
  EXPECT_EQ(o.listen_addr, "127.0.0.1");  // default: loopback only

  absl::Status st = ParseConfigText("pool_size = 2\n\npool_size = lots\n", "t.ini", &o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.ini:3"), absl::string_view::npos) << st;
  st = ParseConfigText("no_such_key = 1\n", "t.ini", &o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.ini:1"), absl::string_view::npos) << st;
  EXPECT_NE(st.message().find("no_such_key"), absl::string_view::npos) << st;
  EXPECT_FALSE(ParseConfigText("garbage line\n", "t.ini", &o).ok());
  EXPECT_FALSE(ParseConfigText("auth_type = ldap\n", "t.ini", &o).ok());
}

}  // namespace
}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {
namespace {

// The server's verdict on the client's final message when the server is
// sent `first` (the client's own first message unless given).
absl::StatusOr<std::string> ScramServerFinal(auth::ScramClient* c, auth::ScramServer* s,
                                             std::string first = "") {
  auto sf = s->ServerFirst(first.empty() ? c->FirstMessage() : first);
  if (!sf.ok()) return sf.status();
  auto cf = c->FinalMessage(*sf);
  if (!cf.ok()) return cf.status();
  return s->ServerFinal(*cf);
}

TEST(Auth, ScramRoundTripAndWrongPassword) {
  auth::ScramClient c("pässword-1");
  auth::ScramServer s("pässword-1");
  auto v = ScramServerFinal(&c, &s);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(c.VerifyServerFinal(*v).ok());
  EXPECT_FALSE(c.VerifyServerFinal("v=AAAA").ok());

  auth::ScramClient bad("other");
  auth::ScramServer s2("pässword-1");
  EXPECT_FALSE(ScramServerFinal(&bad, &s2).ok());
  // RFC 4648 vectors.
  EXPECT_EQ(auth::Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(auth::Base64("fo"), "Zm8=");
  EXPECT_EQ(auth::Unbase64("Zm8=").value(), "fo");
  EXPECT_EQ(auth::Unbase64("Zm9vYg==").value(), "foob");
}

// A SCRAM secret as PostgreSQL 15 stores it (password 'pencil'): the
// proxy checks clients against it, then logs in to the server with the
// ClientKey the client proved (pass-through), which a server holding the
// same secret accepts; nothing works with a wrong password.
TEST(Auth, ScramAgainstAStoredSecretAndKeyPassThrough) {
  const std::string secret =
      "SCRAM-SHA-256$4096:UZOdmhIf+sZBjVvy+T6JfQ==$UWe0rsxmlSCFqAALfVXpFbAI7EW0/R+BWPpQRHB++R4=:"
      "xoCaVgwwhpAwfeWTJoRZYhX92Dtd7dVcBCYh+GjWeqA=";
  EXPECT_TRUE(auth::IsStoredSecret(secret));
  EXPECT_TRUE(auth::IsStoredSecret(auth::Md5Response("u", "p", "")));  // "md5" + 32 hex, a stored md5 form
  EXPECT_FALSE(auth::IsStoredSecret("md5-is-my-password"));
  EXPECT_FALSE(auth::IsStoredSecret("pencil"));
  int it = 0;
  std::string salt, stored, server;
  EXPECT_TRUE(auth::ParseScramSecret(secret, &it, &salt, &stored, &server).ok());
  EXPECT_EQ(it, 4096);
  EXPECT_FALSE(auth::ParseScramSecret("SCRAM-SHA-256$4096:abc", &it, &salt, &stored, &server).ok());

  auth::ScramClient wrong("pen");
  auth::ScramServer s0(secret);
  EXPECT_FALSE(ScramServerFinal(&wrong, &s0).ok());

  auth::ScramClient c("pencil");
  auth::ScramServer s(secret);
  auto v = ScramServerFinal(&c, &s);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(c.VerifyServerFinal(*v).ok());
  ASSERT_EQ(s.client_key().size(), 32u);

  // The proxy towards the server (which holds the same secret).
  auth::ScramClient through = auth::ScramClient::WithKeys(s.client_key(), s.server_key());
  auth::ScramServer upstream(secret);
  auto v2 = ScramServerFinal(&through, &upstream);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_TRUE(through.VerifyServerFinal(*v2).ok());
  // Keys from a wrong-password attempt are never handed out; made-up ones fail.
  auth::ScramClient forged = auth::ScramClient::WithKeys(std::string(32, 'x'), s.server_key());
  auth::ScramServer upstream2(secret);
  EXPECT_FALSE(ScramServerFinal(&forged, &upstream2).ok());
}

// The server checks that the client-final's c= is the base64 of the gs2
// header the client-first sent (PostgreSQL does): here the client computes a
// valid proof (the proof covers the bare messages, not the header) but its
// c= does not echo what the server was sent, so only that check refuses it.
TEST(Auth, ScramClientFinalMustEchoTheGs2Header) {
  // The header as sent; the honest client's own first message is "n,,<bare>".
  for (const char* header : {"y,,", "n,a=alice,"}) {
    auth::ScramClient c("pw");
    auth::ScramServer s("pw");
    const std::string first = c.FirstMessage();
    ASSERT_TRUE(absl::StartsWith(first, "n,,")) << first;  // so its c= is "biws"
    auto v = ScramServerFinal(&c, &s, absl::StrCat(header, first.substr(3)));
    ASSERT_FALSE(v.ok()) << header;
    EXPECT_TRUE(absl::StrContains(v.status().message(), "channel binding check failed")) << v.status();
  }
  {  // The same exchange with the header echoed passes (the proof was valid).
    auth::ScramClient c("pw");
    auth::ScramServer s("pw");
    EXPECT_TRUE(ScramServerFinal(&c, &s).ok());
    // c= must come first: the same attributes reordered are malformed.
    auth::ScramServer s2("pw");
    auto sf2 = s2.ServerFirst(c.FirstMessage());
    ASSERT_TRUE(sf2.ok());
    const std::string nonce(sf2->substr(2, sf2->find(',') - 2));
    auto v = s2.ServerFinal(absl::StrCat("r=", nonce, ",c=biws,p=AAAA"));
    ASSERT_FALSE(v.ok());
    EXPECT_TRUE(absl::StrContains(v.status().message(), "malformed")) << v.status();
  }
  // Nothing before a successful server-first, even a message whose every
  // attribute matches the (empty) state.
  auth::ScramServer fresh("pw");
  EXPECT_FALSE(fresh.ServerFinal("c=,r=,p=AAAA").ok());
  EXPECT_FALSE(fresh.ServerFirst("n,,n=,r=").ok());  // no client nonce
  EXPECT_FALSE(fresh.ServerFinal("c=biws,r=,p=AAAA").ok());
}

// A waiting transaction as the stealing rule sees it.
struct Waiter {
  bool affinity;
  int64_t since;
  bool blocked = true;  // a running transaction holds one of its references
};

StealPick Pick(const std::vector<std::deque<Waiter>>& q, int self, StealMode m, int64_t now,
               int64_t after) {
  return PickSteal(
      q, self, m, now, after, [](const Waiter& w) { return w.affinity; },
      [](const Waiter& w) { return w.blocked; }, [](const Waiter& w) { return w.since; });
}

int Own(const std::deque<Waiter>& q, StealMode m, int64_t now, int64_t after) {
  return PickOwn(
      q, m, now, after, [](const Waiter& w) { return w.blocked; },
      [](const Waiter& w) { return w.since; });
}

TEST(Steal, AffinityAwareTakesOnlyUnplacedOrLongWaiting) {
  // Queue 0: an affine transaction (oldest) then a free one; queue 1: an
  // affine one; queue 2 is the idle backend's own (never stolen from).
  std::vector<std::deque<Waiter>> q = {{{true, 100}, {false, 300}}, {{true, 200}}, {{false, 50}}};
  // Plain stealing: the oldest waiting of the other queues, affine or not.
  StealPick p = Pick(q, 2, StealMode::kAny, 1000, 0);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 0u);
  // Affinity-aware, bound not reached (waited 900 and 800 < 5000): only the
  // free transaction behind the affine one in queue 0.
  p = Pick(q, 2, StealMode::kAffinity, 1000, 5000);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 1u);
  // Bound 0 = never: same.
  p = Pick(q, 2, StealMode::kAffinity, 1000000, 0);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 1u);
  // Past the bound (now 6000: waited 5900 and 5800 > 5000): the oldest
  // affine one is stealable again.
  p = Pick(q, 2, StealMode::kAffinity, 6000, 5000);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 0u);
  // Only queue 1's affine transaction has passed the bound.
  q[0] = {{true, 5500}};
  p = Pick(q, 2, StealMode::kAffinity, 6000, 5000);
  EXPECT_EQ(p.queue, 1);
  EXPECT_EQ(p.pos, 0u);
  // Nothing stealable: affine only, within the bound; or stealing off.
  p = Pick(q, 2, StealMode::kAffinity, 5100, 5000);
  EXPECT_EQ(p.queue, -1);
  EXPECT_EQ(Pick(q, 2, StealMode::kOff, 1 << 30, 1).queue, -1);
  // The backend's own queue is not a steal (its free waiter at 50 is ignored).
  q = {{}, {}, {{false, 50}}};
  EXPECT_EQ(Pick(q, 2, StealMode::kAny, 1000, 0).queue, -1);
  EXPECT_TRUE(MaySteal(StealMode::kAffinity, false, true, 0, 0));
  EXPECT_FALSE(MaySteal(StealMode::kAffinity, true, false, 10, 0));  // affinity ignores blocked
  EXPECT_FALSE(MaySteal(StealMode::kAffinity, true, true, 10, 10));
  EXPECT_TRUE(MaySteal(StealMode::kAffinity, true, true, 11, 10));
}

TEST(Steal, InFlightAwareTakesUnblockedAffineTransactions) {
  // Queue 0: an affine transaction whose key runs elsewhere (blocked), then
  // an affine one whose key nobody runs; queue 1: a blocked affine one that
  // waited longest.
  std::vector<std::deque<Waiter>> q = {{{true, 100, true}, {true, 300, false}},
                                       {{true, 50, true}},
                                       {}};
  // Only the unblocked affine transaction may be stolen...
  StealPick p = Pick(q, 2, StealMode::kInFlight, 1000, 5000);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 1u);
  // ...however long the blocked ones have waited (past the bound, a blocked
  // one would only run beside its holder and conflict).
  p = Pick(q, 2, StealMode::kInFlight, 100000, 5000);
  EXPECT_EQ(p.queue, 0);
  EXPECT_EQ(p.pos, 1u);
  // The affinity-only rule takes none of them before the bound.
  EXPECT_EQ(Pick(q, 2, StealMode::kAffinity, 1000, 5000).queue, -1);
  // Once everything is unblocked the oldest wins again.
  q[1][0].blocked = false;
  p = Pick(q, 2, StealMode::kInFlight, 1000, 5000);
  EXPECT_EQ(p.queue, 1);
  EXPECT_EQ(p.pos, 0u);
  // A queue's own backend passes over a blocked front for the next one...
  EXPECT_EQ(Own(q[0], StealMode::kInFlight, 1000, 5000), 1);
  // ...waits when all are blocked...
  q[0][1].blocked = true;
  EXPECT_EQ(Own(q[0], StealMode::kInFlight, 1000, 5000), -1);
  // ...also past the bound, and is plain FIFO in other modes.
  EXPECT_EQ(Own(q[0], StealMode::kInFlight, 100000, 5000), -1);
  EXPECT_EQ(Own(q[0], StealMode::kAffinity, 1000, 5000), 0);
  EXPECT_EQ(Own(q[0], StealMode::kAny, 1000, 5000), 0);
  EXPECT_EQ(Own({}, StealMode::kInFlight, 1000, 5000), -1);
  // Non-affine transactions never count as blocked.
  EXPECT_TRUE(MaySteal(StealMode::kInFlight, false, true, 0, 0));
  EXPECT_FALSE(MaySteal(StealMode::kInFlight, true, true, 0, 0));
  EXPECT_TRUE(MaySteal(StealMode::kInFlight, true, false, 0, 0));
  EXPECT_FALSE(MaySteal(StealMode::kInFlight, true, true, 100000, 5000));
  EXPECT_TRUE(MaySteal(StealMode::kAffinity, true, true, 100000, 5000));
}

TEST(Steal, RouteReportsLearnedAffinity) {
  scheduler::Scheduler::Options so;
  so.num_queues = 4;
  auto s = scheduler::Scheduler::Create(so, {}).value();
  scheduler::Txn t;
  t.refs = {RefId::Of("aid=7")};
  bool affinity = true;
  s->Route(t, &affinity);
  EXPECT_FALSE(affinity);  // nothing learned: the default rule chose
  s->ReportOutcome(t, scheduler::Outcome::kConflictAbort);
  // The first scoring placement has no State row yet: default rule, seeds it.
  scheduler::Txn u;
  u.refs = t.refs;
  const QueueId home = s->Route(u, &affinity);
  EXPECT_FALSE(affinity);
  scheduler::Txn v;
  v.refs = t.refs;
  EXPECT_EQ(s->Route(v, &affinity), home);
  EXPECT_TRUE(affinity);  // the learned row decided
  scheduler::Txn cold;
  cold.refs = {RefId::Of("aid=99999")};
  s->Route(cold, &affinity);
  EXPECT_FALSE(affinity);
  s->SetPolicy(ParsePolicy("original").value());
  s->Route(v, &affinity);
  EXPECT_FALSE(affinity);
  s->SetPolicy(ParsePolicy("hard-partition").value());
  s->Route(v, &affinity);
  EXPECT_TRUE(affinity);
}

// Issue 16: `policy = auto` and the aging half-life are config keys; the
// scheduler a proxy builds from them runs auto and ages its History.
TEST(Config, PolicyAutoAndHistoryHalfLife) {
  Options o;
  EXPECT_EQ(o.history_half_life_s, 2);
  ASSERT_TRUE(ParseConfigText("policy = auto\nhistory_half_life_s = 0.5\n", "t.ini", &o).ok());
  EXPECT_TRUE(o.auto_policy);
  EXPECT_EQ(o.history_half_life_s, 0.5);
  auto p = Proxy::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->scheduler().auto_policy());
  EXPECT_EQ((*p)->scheduler().history().half_life_ns(), 500000000);
  EXPECT_NE((*p)->scheduler().PolicyLabel().find("auto ("), std::string::npos);
  ASSERT_TRUE(ApplyConfigLine("policy", "original", &o).ok());
  EXPECT_FALSE(o.auto_policy);
  EXPECT_FALSE(ApplyConfigLine("history_half_life_s", "-1", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("history_half_life_s", "soon", &o).ok());
}

// Commit admission: on by default in the proxy (a reference's first commit is
// not counted, its second is), off with 0; a bad value names its line.
TEST(Config, HistoryDoorkeeper) {
  Options o;
  EXPECT_EQ(o.history_doorkeeper_log2_bits, 20);
  {
    auto p = Proxy::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    history::History& h = (*p)->scheduler().history();
    const RefId r = RefId::Of("aid=1");
    h.RecordCommit({r});
    history::History::Counts c;
    EXPECT_FALSE(h.Get(r, &c));
    h.RecordCommit({r});
    ASSERT_TRUE(h.Get(r, &c));
    EXPECT_EQ(h.unadmitted_commits(), 1);
  }
  ASSERT_TRUE(ParseConfigText("history_doorkeeper_log2_bits = 0\n", "t.ini", &o).ok());
  {
    auto p = Proxy::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    history::History& h = (*p)->scheduler().history();
    h.RecordCommit({RefId::Of("aid=1")});
    EXPECT_EQ(h.size(), 1);
    EXPECT_EQ(h.unadmitted_commits(), 0);
  }
  absl::Status st = ParseConfigText("pool_size = 2\nhistory_doorkeeper_log2_bits = 5\n", "t.ini", &o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.ini:2"), absl::string_view::npos) << st;
  EXPECT_FALSE(ApplyConfigLine("history_doorkeeper_log2_bits", "31", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("history_doorkeeper_log2_bits", "many", &o).ok());
}

// Hot-spot splitting (issue 16): off by default; on, the database's
// Scheduler takes the caller's loads (routed_loads, one queue per
// backend); a bad value names its line.
TEST(Config, FreeReads) {
  Options o;
  EXPECT_TRUE(o.free_reads);
  ASSERT_TRUE(ParseConfigText("pool_size = 3\nfree_reads = off\n", "t.ini", &o).ok());
  EXPECT_FALSE(o.free_reads);
  ASSERT_TRUE(ApplyConfigLine("free_reads", "on", &o).ok());
  EXPECT_TRUE(o.free_reads);
  absl::Status st = ParseConfigText("pool_size = 2\nfree_reads = sometimes\n", "t.ini", &o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.ini:2"), absl::string_view::npos) << st;
}

TEST(Config, Split) {
  Options o;
  EXPECT_FALSE(o.split);
  {
    auto p = Proxy::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)->scheduler().routed_loads(), nullptr);
    EXPECT_EQ((*p)->scheduler().hot_spots(), nullptr);
  }
  ASSERT_TRUE(ParseConfigText("pool_size = 3\nsplit = on\nsplit_max_k = 8\nsplit_window_ms = 100\n", "t.ini", &o).ok());
  EXPECT_TRUE(o.split);
  EXPECT_EQ(o.split_max_k, 8);
  EXPECT_EQ(o.split_window_ms, 100);
  {
    auto p = Proxy::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_NE((*p)->scheduler().routed_loads(), nullptr);
    EXPECT_EQ((*p)->scheduler().routed_loads()->num_queues(), 3);
  }
  absl::Status st = ParseConfigText("pool_size = 2\nsplit_max_k = 1\n", "t.ini", &o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t.ini:2"), absl::string_view::npos) << st;
  EXPECT_FALSE(ApplyConfigLine("split", "maybe", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("split_window_ms", "10", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("split_max_k", "17", &o).ok());
}

// Safe defaults (issue 26): trust on a non-loopback listen_addr does not
// start unless allow_trust_on_network says so; the error names the key.
TEST(Config, TrustOnNetworkIsRefusedUnlessAllowed) {
  Options o;
  ASSERT_TRUE(ParseConfigText("listen_addr = 0.0.0.0\nauth_type = trust\n", "t.ini", &o).ok());
  auto p = Proxy::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("allow_trust_on_network"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("0.0.0.0"), std::string::npos) << p.status();
  ASSERT_TRUE(ParseConfigText("allow_trust_on_network = 1\n", "t.ini", &o).ok());
  EXPECT_TRUE(Proxy::Create(o).ok());
  EXPECT_FALSE(ApplyConfigLine("allow_trust_on_network", "maybe", &o).ok());
  for (const char* local : {"127.0.0.1", "localhost", "::1"}) {
    Options l;
    l.listen_addr = local;
    EXPECT_TRUE(CheckSafeDefaults(l).ok()) << local;
  }
  Options md5;
  md5.listen_addr = "10.1.2.3";
  md5.auth_type = "md5";
  EXPECT_TRUE(CheckSafeDefaults(md5).ok());
}

TEST(Config, AdminAndStatsUsers) {
  Options o;
  EXPECT_EQ(AdminRoleOf(o, o.server_user), AdminRole::kAdmin);  // both lists empty
  EXPECT_EQ(AdminRoleOf(o, "bob"), AdminRole::kNone);
  ASSERT_TRUE(ParseConfigText("admin_users = alice, carol\nstats_users = monitor\n", "t.ini", &o).ok());
  EXPECT_EQ(AdminRoleOf(o, "alice"), AdminRole::kAdmin);
  EXPECT_EQ(AdminRoleOf(o, "carol"), AdminRole::kAdmin);
  EXPECT_EQ(AdminRoleOf(o, "monitor"), AdminRole::kStats);
  EXPECT_EQ(AdminRoleOf(o, "bob"), AdminRole::kNone);
  EXPECT_EQ(AdminRoleOf(o, o.server_user), AdminRole::kNone);  // listed users only
}

// [databases] / [users] sections (PgBouncer's form), the entry a name
// selects (defaults filled), "*" and the implicit entry of the old keys.
TEST(Config, DatabasesAndUsersSections) {
  Options o;
  ASSERT_TRUE(ParseConfigText("server_host = 10.0.0.9\npool_size = 4\nauth_user = pgb\n"
                              "[databases]\n"
                              "shop = host=10.0.0.1 port=5433 dbname=shop_prod user=app password=pw pool_size=2\n"
                              "hr =\n"
                              "* = port=6000\n"
                              "[users]\nalice = pool_size=1\n"
                              "[pgbouncer]\nlisten_port = 7000\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_EQ(o.listen_port, 7000);
  EXPECT_EQ(o.user_pool_size.at("alice"), 1);
  auto shop = FindDatabase(o, "shop");
  ASSERT_TRUE(shop.ok());
  EXPECT_EQ(shop->host, "10.0.0.1");
  EXPECT_EQ(shop->port, 5433);
  EXPECT_EQ(shop->dbname, "shop_prod");
  EXPECT_EQ(shop->user, "app");
  EXPECT_EQ(shop->password, "pw");
  EXPECT_EQ(shop->pool_size, 2);
  EXPECT_EQ(shop->auth_user, "pgb");
  auto hr = FindDatabase(o, "hr");
  ASSERT_TRUE(hr.ok());
  EXPECT_EQ(hr->host, "10.0.0.9");
  EXPECT_EQ(hr->dbname, "hr");
  EXPECT_EQ(hr->user, "");  // the client's own login
  EXPECT_EQ(hr->pool_size, 4);
  auto other = FindDatabase(o, "anything");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->name, "anything");
  EXPECT_EQ(other->dbname, "anything");
  EXPECT_EQ(other->port, 6000);
  EXPECT_EQ(DefaultDatabase(o), "hr");  // the first named entry (std::map order)

  Options strict;
  ASSERT_TRUE(ParseConfigText("[databases]\nshop = dbname=s\n", "t.ini", &strict).ok());
  auto none = FindDatabase(strict, "nosuchdb");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "database \"nosuchdb\" does not exist");

  Options old;  // no [databases]: server_dbname only, as server_user
  old.server_dbname = "app";
  old.server_user = "owner";
  EXPECT_FALSE(FindDatabase(old, "postgres").ok());
  auto app = FindDatabase(old, "app");
  ASSERT_TRUE(app.ok());
  EXPECT_EQ(app->user, "owner");
  EXPECT_EQ(DefaultDatabase(old), "app");

  for (const char* bad : {"[databases]\nx = host\n", "[databases]\nx = pool_size=0\n",
                          "[databases]\nx = password=p\n", "[databases]\ncorral = dbname=y\n",
                          "[users]\nbob = max=3\n", "[users]\nbob = pool_size=x\n"}) {
    Options b;
    absl::Status st = ParseConfigText(bad, "b.ini", &b);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(st.message(), "b.ini:2:")) << st;
  }
}

TEST(Config, StealingModes) {
  Options o;
  ASSERT_TRUE(ParseConfigText("stealing = any\nsteal_after_ms = 20\n", "t.ini", &o).ok());
  EXPECT_TRUE(o.stealing);
  EXPECT_TRUE(o.steal_any);
  EXPECT_EQ(o.steal_after_ms, 20);
  ASSERT_TRUE(ParseConfigText("stealing = on\n", "t.ini", &o).ok());
  EXPECT_TRUE(o.stealing);
  EXPECT_FALSE(o.steal_any);
  EXPECT_TRUE(o.steal_inflight);
  ASSERT_TRUE(ParseConfigText("stealing = affinity\n", "t.ini", &o).ok());
  EXPECT_TRUE(o.stealing);
  EXPECT_FALSE(o.steal_any);
  EXPECT_FALSE(o.steal_inflight);
  EXPECT_FALSE(ParseConfigText("stealing = sometimes\n", "t.ini", &o).ok());
}

TEST(Config, RetryRoutingAndTemplates) {
  Options o;
  EXPECT_TRUE(o.retry_routing);  // the defaults
  EXPECT_FALSE(o.templates);
  ASSERT_TRUE(ParseConfigText("retry_routing = off\nretry_memory_size = 16\ntemplates = on\n"
                              "template_threshold = 0.8\ntemplate_max = 32\n"
                              "[databases]\nshop = retry_routing=on templates=off\nhr =\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_FALSE(o.retry_routing);
  EXPECT_EQ(o.retry_memory_size, 16u);
  EXPECT_TRUE(o.templates);
  EXPECT_DOUBLE_EQ(o.template_threshold, 0.8);
  EXPECT_EQ(o.template_max, 32u);
  EXPECT_EQ(o.databases["shop"].retry_routing, 1);
  EXPECT_EQ(o.databases["shop"].templates, 0);
  EXPECT_EQ(o.databases["hr"].retry_routing, -1);  // the global key
  EXPECT_FALSE(ApplyConfigLine("retry_routing", "sometimes", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("template_threshold", "1.5", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("retry_memory_size", "-1", &o).ok());
  EXPECT_FALSE(ApplyDatabaseLine("x", "templates=maybe", &o).ok());
}

TEST(Config, TemplateConcurrency) {
  Options o;
  EXPECT_FALSE(o.template_concurrency);  // off by default
  ASSERT_TRUE(ParseConfigText("template_concurrency = on\ntemplate_cap_max_k = 6\ntemplate_cap_window_ms = 100\n"
                              "template_cap_window_ends = 5\n"
                              "[databases]\nshop = template_concurrency=off\nhr =\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_TRUE(o.template_concurrency);
  EXPECT_EQ(o.template_cap_max_k, 6);
  EXPECT_EQ(o.template_cap_window_ms, 100);
  EXPECT_EQ(o.template_cap_window_ends, 5);
  EXPECT_EQ(o.databases["shop"].template_concurrency, 0);
  EXPECT_EQ(o.databases["hr"].template_concurrency, -1);  // the global key
  EXPECT_FALSE(ApplyConfigLine("template_concurrency", "sometimes", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("template_cap_max_k", "0", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("template_cap_window_ms", "-5", &o).ok());
  EXPECT_FALSE(ApplyDatabaseLine("x", "template_concurrency=maybe", &o).ok());
}

TEST(Config, Workers) {
  Options o;
  EXPECT_EQ(o.workers, 1);  // one event loop unless asked
  ASSERT_TRUE(ParseConfigText("workers = 2\nworker_lock_threshold = 1.5\n", "t.ini", &o).ok());
  EXPECT_EQ(o.workers, 2);
  EXPECT_EQ(o.worker_lock_threshold, 1.5);
  EXPECT_FALSE(ApplyConfigLine("workers", "0", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("workers", "many", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("worker_lock_threshold", "0", &o).ok());
  o.schema = nullptr;
  EXPECT_TRUE(Proxy::Create(o).ok());
  // With multi-proxy mode too (the loops share one ClusterSync per
  // database); at least one loop.
  o.cluster_name = "shop";
  EXPECT_TRUE(Proxy::Create(o).ok());
  o.cluster_name = "";
  o.workers = 0;
  EXPECT_FALSE(Proxy::Create(o).ok());
}

TEST(Config, Replay) {
  Options o;
  EXPECT_FALSE(o.replay);  // the defaults
  EXPECT_EQ(o.replay_buffer_bytes, 65536u);
  EXPECT_EQ(o.replay_max_attempts, 3);
  ASSERT_TRUE(ParseConfigText("replay = on\nreplay_buffer_bytes = 1024\nreplay_max_attempts = 5\n"
                              "[databases]\nshop = replay=off\nhr =\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_TRUE(o.replay);
  EXPECT_EQ(o.replay_buffer_bytes, 1024u);
  EXPECT_EQ(o.replay_max_attempts, 5);
  EXPECT_EQ(o.databases["shop"].replay, 0);
  EXPECT_EQ(o.databases["hr"].replay, -1);  // the global key
  EXPECT_FALSE(ApplyConfigLine("replay", "sometimes", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("replay_max_attempts", "0", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("replay_buffer_bytes", "-1", &o).ok());
  EXPECT_FALSE(ApplyDatabaseLine("x", "replay=maybe", &o).ok());
}

TEST(ProxyConfigTest, RestartOnHotKeyKeys) {
  Options o;
  EXPECT_FALSE(o.restart_on_hot_key);  // the defaults
  EXPECT_TRUE(o.restart_after_release);
  ASSERT_TRUE(ParseConfigText("restart_on_hot_key = on\nrestart_after_release = off\n"
                              "[databases]\nshop = restart_on_hot_key=off\nhr =\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_TRUE(o.restart_on_hot_key);
  EXPECT_FALSE(o.restart_after_release);
  EXPECT_EQ(o.databases["shop"].restart_on_hot_key, 0);
  EXPECT_EQ(o.databases["hr"].restart_on_hot_key, -1);  // the global key
  EXPECT_FALSE(ApplyConfigLine("restart_on_hot_key", "sometimes", &o).ok());
  EXPECT_FALSE(ApplyConfigLine("restart_after_release", "2", &o).ok());
  EXPECT_FALSE(ApplyDatabaseLine("x", "restart_on_hot_key=maybe", &o).ok());
}

}  // namespace
}  // namespace proxy
}  // namespace corral
