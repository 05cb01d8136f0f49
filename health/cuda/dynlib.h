// cuBLASLt and NCCL are opened with dlopen when a check first needs them, not linked: the
// module then loads where only the driver (libcuda.so.1) is installed, and the checks that need
// neither library still run where those libraries are missing.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace autoheal::cuda {

// The toolkit's library folder at build time, tried after the loader's own search path.
#ifndef AUTOHEAL_CUDA_LIB_DIR
#define AUTOHEAL_CUDA_LIB_DIR ""
#endif

// Opens the first of `names` that loads (each as given, then in AUTOHEAL_CUDA_LIB_DIR);
// on failure *error lists every dlerror().
inline void* OpenFirstLibrary(std::initializer_list<const char*> names, std::string* error) {
    std::string dir = AUTOHEAL_CUDA_LIB_DIR;
    for (const char* name : names) {
        for (const std::string& path : {std::string(name), dir.empty() ? "" : dir + "/" + name}) {
            if (path.empty()) continue;
            if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
            const char* why = dlerror();
            if (!error->empty()) *error += "; ";
            *error += why != nullptr ? why : path;
        }
    }
    return nullptr;
}

// Looks up `name` into *fn; appends the name to *missing when absent.
template <class Fn>
void LoadSymbol(void* lib, const char* name, Fn* fn, std::string* missing) {
    *fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (*fn == nullptr) {
        if (!missing->empty()) *missing += ", ";
        *missing += name;
    }
}

}  // namespace autoheal::cuda
