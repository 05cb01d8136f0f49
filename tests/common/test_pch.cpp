// The translation unit that builds the test binaries' shared precompiled header
// (autoheal_test_pch in the top CMakeLists.txt); it has no code of its own.
