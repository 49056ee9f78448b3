// ThreadSanitizer suppressions for libcuckoo internals (see history/BUILD).
// The TSan runtime calls this hook at start-up; other builds never call it.
extern "C" const char* __tsan_default_suppressions() {
  return "race:libcuckoo::cuckoohash_map*::cuckoopath_search\n"
         "race:libcuckoo::cuckoohash_map*::cuckoopath_move\n"
         "race:libcuckoo::cuckoohash_map*::maybe_resize_locks\n"
         "race:libcuckoo::cuckoohash_map*::cuckoo_fast_double\n"
         "race:libcuckoo::cuckoohash_map*::get_current_locks\n";
}
