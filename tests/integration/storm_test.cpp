// endured under a storm of concurrent operator and agent requests (issue 20).
#include <gtest/gtest.h>
