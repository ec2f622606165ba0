// kiln command-line entry: dispatches to one verb per file.
#include <cstdio>

int main() { std::puts("kiln"); return 0; }
