// Host side of a production-kernel capture: the kernel runs from its PTX text (cuModuleLoadData), its
// argument bytes are recorded exactly as the host built them (__grid_constant__ structs with tensor maps and
// device pointers inside), and the device address of every array is written down so that a replay can place
// each array where it was (GlobalMemory.map(array, at=address)).
//
// A case writes, under OUTDIR/<case>/: config.json (kernel, grid, block, shared bytes, the argument bytes,
// each array's address, dtype and shape), in_<name>.bin (the bytes before the launch) and out_<name>.bin
// (after it). Each case runs twice from fresh inputs; "reproducible" says whether both runs agreed.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <sys/stat.h>

#define CAP_CHECK(x) do { auto _e = (x); if (_e != 0) { fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, \
    __LINE__, #x, (int)_e); exit(1); } } while (0)

namespace capture {

inline uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
// a uniform float in [lo, hi) from (seed, index), the same on every machine
inline float uniform(uint64_t seed, uint64_t i, float lo, float hi) {
    return lo + (hi - lo) * (float)(splitmix(seed * 0x100000001B3ull + i) >> 40) * (1.0f / 16777216.0f);
}

struct Array { std::string name, dtype; std::vector<size_t> shape; void *dev; size_t bytes; std::vector<char> init; bool out; };

struct Case {
    std::string name, outdir, ptx, kernel;
    std::vector<Array> arrays;
    std::vector<std::vector<char>> params;
    std::string origin, flags, ptx_file;     // flags: the compiler flags (CAPTURE_FLAGS)

    Case(const char *ptx_path, const char *dir, const std::string &case_name) : name(case_name) {
        outdir = std::string(dir) + "/" + case_name;
        mkdir(dir, 0755); mkdir(outdir.c_str(), 0755);
        std::string pp(ptx_path);
        ptx_file = pp.substr(pp.find_last_of('/') + 1);
        if (const char *fl = getenv("CAPTURE_FLAGS")) flags = fl;
        std::ifstream f(ptx_path, std::ios::binary);
        if (!f) { fprintf(stderr, "cannot read %s\n", ptx_path); exit(1); }
        std::stringstream s; s << f.rdbuf(); ptx = s.str();
    }
    void keep(const void *kernel) { kept = kernel; }
    const void *kept = nullptr;
    // an array already on the device (its contents now are the input); out: the kernel writes it
    void array(const std::string &n, void *dev, size_t bytes, const std::string &dtype, std::vector<size_t> shape,
               bool out) {
        Array a{n, dtype, shape, dev, bytes, std::vector<char>(bytes), out};
        CAP_CHECK(cudaMemcpy(a.init.data(), dev, bytes, cudaMemcpyDeviceToHost));
        arrays.push_back(a);
    }
    template<typename T> void param(const T &v) {
        std::vector<char> b(sizeof(T)); memcpy(b.data(), &v, sizeof(T)); params.push_back(b);
    }
    static std::string hex(const std::vector<char> &b) {
        static const char *d = "0123456789abcdef"; std::string s;
        for (unsigned char c : b) { s += d[c >> 4]; s += d[c & 15]; }
        return s;
    }
    void write(const std::string &path, const void *p, size_t n) {
        FILE *f = fopen((outdir + "/" + path).c_str(), "wb"); fwrite(p, 1, n, f); fclose(f);
    }
    // the mangled name of the one .entry whose name contains `part`
    std::string entry(const std::string &part) {
        std::string found; size_t pos = 0;
        while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
            pos += 7; size_t e = ptx.find_first_of("( \n", pos); std::string n = ptx.substr(pos, e - pos);
            if (n.find(part) != std::string::npos) { if (!found.empty() && found != n) { fprintf(stderr,
                "two entries match %s\n", part.c_str()); exit(1); } found = n; }
        }
        if (found.empty()) { fprintf(stderr, "no entry matches %s\n", part.c_str()); exit(1); }
        return found;
    }
    void run(const std::string &entry_part, dim3 grid, dim3 block, unsigned shared, dim3 cluster = dim3(1, 1, 1)) {
        kernel = entry(entry_part);
        CUmodule mod; CUfunction fn;
        CAP_CHECK(cuModuleLoadData(&mod, ptx.c_str()));
        CAP_CHECK(cuModuleGetFunction(&fn, mod, kernel.c_str()));
        if (shared > 48 * 1024)
            CAP_CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared));
        std::vector<void *> ptrs;
        for (auto &p : params) ptrs.push_back(p.data());
        std::vector<std::vector<char>> first;
        bool same = true;
        for (int run = 0; run < 2; run++) {
            for (auto &a : arrays) CAP_CHECK(cudaMemcpy(a.dev, a.init.data(), a.bytes, cudaMemcpyHostToDevice));
            CAP_CHECK(cudaDeviceSynchronize());
            CUlaunchConfig cfg{}; CUlaunchAttribute attr[1];
            cfg.gridDimX = grid.x; cfg.gridDimY = grid.y; cfg.gridDimZ = grid.z;
            cfg.blockDimX = block.x; cfg.blockDimY = block.y; cfg.blockDimZ = block.z;
            cfg.sharedMemBytes = shared; cfg.hStream = 0;
            if (cluster.x * cluster.y * cluster.z > 1) {
                attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
                attr[0].value.clusterDim.x = cluster.x; attr[0].value.clusterDim.y = cluster.y;
                attr[0].value.clusterDim.z = cluster.z;
                cfg.attrs = attr; cfg.numAttrs = 1;
            }
            CAP_CHECK(cuLaunchKernelEx(&cfg, fn, ptrs.data(), nullptr));
            CAP_CHECK(cudaDeviceSynchronize());
            int k = 0;
            for (auto &a : arrays) {
                if (!a.out) continue;
                std::vector<char> got(a.bytes);
                CAP_CHECK(cudaMemcpy(got.data(), a.dev, a.bytes, cudaMemcpyDeviceToHost));
                if (run == 0) first.push_back(got);
                else { same = same && got == first[k]; }
                k++;
            }
        }
        int k = 0;
        std::ostringstream js;
        js << "{\"kernel\": \"" << kernel << "\", \"grid\": [" << grid.x << ", " << grid.y << ", " << grid.z
           << "], \"block\": [" << block.x << ", " << block.y << ", " << block.z << "], \"shared\": " << shared
           << ", \"cluster\": [" << cluster.x << ", " << cluster.y << ", " << cluster.z << "], \"args\": [";
        for (size_t i = 0; i < params.size(); i++) js << (i ? ", " : "") << "\"" << hex(params[i]) << "\"";
        js << "], \"reproducible\": " << (same ? "true" : "false") << ", \"origin\": \"" << origin
           << "\", \"flags\": \"" << flags << "\", \"ptx_file\": \"" << ptx_file << "\", \"arrays\": [";
        for (size_t i = 0; i < arrays.size(); i++) {
            auto &a = arrays[i];
            js << (i ? ", " : "") << "{\"name\": \"" << a.name << "\", \"dtype\": \"" << a.dtype << "\", \"address\": "
               << (unsigned long long)(uintptr_t)a.dev << ", \"out\": " << (a.out ? "true" : "false") << ", \"shape\": [";
            for (size_t j = 0; j < a.shape.size(); j++) js << (j ? ", " : "") << a.shape[j];
            js << "]}";
            write("in_" + a.name + ".bin", a.init.data(), a.bytes);
            if (a.out) { write("out_" + a.name + ".bin", first[k].data(), a.bytes); k++; }
        }
        js << "]}\n";
        std::string s = js.str();
        write("config.json", s.data(), s.size());
        printf("%s: %s, reproducible %d\n", name.c_str(), kernel.c_str(), (int)same);
        CAP_CHECK(cuModuleUnload(mod));
    }
};

}  // namespace capture
