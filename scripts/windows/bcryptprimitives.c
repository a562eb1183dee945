/* A stand-in for Windows' bcryptprimitives.dll, for running Rust test executables under Wine 8,
 * which lacks it. Rust's std (1.78 and later) takes its random numbers (HashMap keys) from
 * ProcessPrng there; this forwards to RtlGenRandom (advapi32's SystemFunction036), which Wine has.
 * Only scripts/windows-test.sh uses it, next to the .exe files under Wine; never ship it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
