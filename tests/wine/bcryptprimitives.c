/* bcryptprimitives.dll for Debian 12's wine 8.0, which lacks it; Windows 10 and later ship it.
 * Rust's std (1.78+) imports ProcessPrng from it for HashMap keys, so without it a Rust program
 * does not start under that wine. Only tests/e2e/windows_wine.sh puts it beside nasprobe.exe;
 * the release bundle does not carry it. ProcessPrng fills the buffer from RtlGenRandom
 * (advapi32's SystemFunction036), wine's own system random source. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
