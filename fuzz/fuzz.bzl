"""corral_fuzzer: one libFuzzer target and its corpus-replay regression test.

    load("//fuzz:fuzz.bzl", "corral_fuzzer")
    corral_fuzzer(
        name = "wire_fuzzer",            # wire_fuzzer.cc defines LLVMFuzzerTestOneInput
        deps = [":proxy"],
        corpus = "fuzz_corpus/wire_fuzzer",  # directory beside the BUILD file
    )

makes
  - `name`: the fuzzer binary, tagged manual: it has no main of its own and
    links only under `--config=fuzz` (clang-14 -fsanitize=fuzzer, see
    scripts/fuzz.sh); `bazel build //...` skips it.
  - `name + "_replay_test"`: a cc_test built by the normal toolchain that runs
    every file of `corpus` through LLVMFuzzerTestOneInput (fuzz/replay_main.cc);
    a target abort()s on a violated invariant, which fails the test.
"""

def corral_fuzzer(name, deps, corpus, srcs = None, data = [], size = "small"):
    srcs = srcs or [name + ".cc"]
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps,
        data = data,
        tags = ["manual"],
        testonly = True,
    )
    native.cc_test(
        name = name + "_replay_test",
        size = size,
        srcs = srcs,
        deps = deps + ["//fuzz:replay_main"],
        data = data + native.glob([corpus + "/*"]),
        args = [native.package_name() + "/" + corpus],
    )
