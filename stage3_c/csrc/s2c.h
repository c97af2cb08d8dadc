/* s2c.h -- the C tier's API: status codes and every op of the contract (grader/CONTRACT.md).
 * Every function returns a status; the Python wrappers (stage3_c/*.py) check arguments before
 * calling in and turn a status into an exception. */
#ifndef S2C_H
#define S2C_H

#include <stdint.h>

enum s2c_status {
    S2C_OK = 0,
    S2C_NOT_IMPLEMENTED = 1, /* an exercise stub: the wrapper raises NotImplementedError */
    S2C_BAD_ARGUMENT = 2,    /* a check the wrapper should have made: raises ValueError */
    S2C_OUT_OF_MEMORY = 3    /* a scratch allocation failed: raises MemoryError */
};

#include "matmul.h"

#endif
