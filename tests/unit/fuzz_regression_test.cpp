// Inputs the fuzzers found (fuzz/): each one refused cleanly, never a crash.
#include <gtest/gtest.h>
