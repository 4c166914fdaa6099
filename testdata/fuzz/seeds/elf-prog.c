#include <stdint.h>
volatile uint64_t sink;
static inline uint64_t helper(uint64_t x)
{
	uint64_t y = x * 2654435761u;
	for (int i = 0; i < 8; i++)
		y ^= y >> 7;
	return y;
}
__attribute__((noinline)) uint64_t work(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t k = 0; k < n; k++)
		s += helper(k);
	return s;
}
int main(int argc, char **argv)
{
	(void)argv;
	sink = work(1000u * (uint64_t)argc);
	return 0;
}
