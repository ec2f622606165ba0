/* kiln runtime: status and dtype codes shared by every generated model (plain C). */
#ifndef KILN_RUNTIME_H_
#define KILN_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

/* Status codes returned by every generated API function. */
enum {
  KILN_OK = 0,
  KILN_ERR_NULL = 1,      /* a required pointer argument was NULL */
  KILN_ERR_INDEX = 2,     /* input/output index out of range */
  KILN_ERR_NAME = 3,      /* no input/output has that name */
  KILN_ERR_SIZE = 4,      /* byte size does not match the tensor */
  KILN_ERR_ALLOC = 5,     /* create could not allocate memory */
  KILN_ERR_WEIGHTS = 6,   /* external weights file missing, unreadable or mismatched */
  KILN_ERR_CPU = 7,       /* this CPU lacks an instruction set the code was built for */
  KILN_ERR_ARENA = 8,     /* caller-provided arena too small or misaligned */
  KILN_ERR_UNBOUND = 9,   /* run before every input was set or bound */
  KILN_ERR_DATA = 10      /* input data out of range (e.g. an index), or a Loop past its limit */
};

/* Element type codes (match kiln's IR). */
enum {
  KILN_DTYPE_F32 = 1, KILN_DTYPE_F16 = 2, KILN_DTYPE_BF16 = 3, KILN_DTYPE_F64 = 4,
  KILN_DTYPE_I4 = 5, KILN_DTYPE_U4 = 6, KILN_DTYPE_I8 = 7, KILN_DTYPE_U8 = 8,
  KILN_DTYPE_I16 = 9, KILN_DTYPE_U16 = 10, KILN_DTYPE_I32 = 11, KILN_DTYPE_U32 = 12,
  KILN_DTYPE_I64 = 13, KILN_DTYPE_U64 = 14, KILN_DTYPE_BOOL = 15
};

/* Alignment of the arena and of every buffer in it. */
#define KILN_ALIGNMENT 64

#endif /* KILN_RUNTIME_H_ */
