#include "test_util.h"
int main(void) { return test_skip("not written yet"); }
