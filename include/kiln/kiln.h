/* Kiln: a deep-learning training framework in C. Umbrella header. */
#ifndef KILN_KILN_H
#define KILN_KILN_H
#include "status.h"
#include "tensor.h"
#include "graph.h"
#define KILN_VERSION_STRING "0.1.0"
#endif
