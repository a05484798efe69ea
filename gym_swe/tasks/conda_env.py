"""A conda environment file (``environment.yml``) as pip requirements, for repositories that SWE-bench sets up
with conda (xarray, matplotlib): gym_swe's venvs have pip only.

Run as a script with the task's python while its environment is prepared (standard library only, Python
>= 3.6; `gym_swe.tasks.environments` makes it visible in the prepare jail at `JAIL_PATH`):

    python conda_env.py FILE [FILE...]   -> the requirements of the first FILE that exists, one a line, on
                                            stdout; what was left out, on stderr

What it does with each entry of ``dependencies``:

- a conda match spec becomes a pip requirement: ``name=1.2`` and ``name 1.2`` -> ``name==1.2`` (``1.2.*``
  stays a wildcard), a build string (``name=1.2=py_0``) and a channel (``conda-forge::name``) are dropped,
  ``<``, ``>=``, ``!=`` and ranges stay as they are;
- a name whose PyPI distribution has another name is renamed (`RENAMED`: ``matplotlib-base`` ->
  ``matplotlib``, ``dask-core`` -> ``dask``, ``iris`` -> ``scitools-iris``, ...);
- what is not a Python package on PyPI, or that pip cannot build without system libraries a jail lacks, is
  left out (`LEFT_OUT`: ``python``, ``pip``, ``hdf5``, ``cdms2``, compilers, ...);
- the entries of a ``pip:`` list are pip requirements already and are kept as they are.

Everything else keeps its name. A name pip cannot find then fails the install with pip's own message.
"""

import re
import sys

JAIL_PATH = "/run/gym_swe/conda_env.py"
# Where a prepare jail shows the repository at the record's environment_setup_commit, whose conda file
# SWE-bench reads (at an older base_commit the file may be elsewhere or not there at all).
SETUP_COMMIT_TREE = "/run/gym_swe/setup_commit"

# conda-forge name -> the PyPI distribution that installs the same Python package.
RENAMED = {
    "matplotlib-base": "matplotlib",
    "dask-core": "dask",
    "iris": "scitools-iris",
    "pytables": "tables",
    "python-graphviz": "graphviz",
    "pyqt": "PyQt5",
    "pillow-simd": "pillow",
}
# conda-forge names with no pip counterpart worth trying: the interpreter and pip themselves, C/C++
# libraries and tools, and packages that are on conda only (cdms2, pynio) or need a library pip cannot bring.
LEFT_OUT = {
    "python", "pip", "hdf5", "libnetcdf", "netcdf-fortran", "cdms2", "pynio", "gdal", "libgdal", "proj",
    "geos", "graphviz", "ffmpeg", "imagemagick", "ghostscript", "cairo", "pango", "pkg-config", "tk", "qt",
    "compilers", "c-compiler", "cxx-compiler", "fortran-compiler", "make", "cmake", "nodejs", "git",
    "wxpython", "pygobject", "gtk3", "gtk4", "mpich", "openmpi", "libblas", "liblapack", "mkl", "openblas",
    "nomkl",
}  # fmt: skip
SPEC = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


def pip_requirement(spec):
    """The pip requirement for one conda match spec, or None when it is left out."""
    spec = spec.split("::")[-1].strip()  # conda-forge::name
    found = SPEC.match(spec)
    if not found:
        return None
    name, version = found.group(1), found.group(2).replace(" ", "")
    name = RENAMED.get(name.lower(), name)
    if name.lower() in LEFT_OUT:
        return None
    if version.startswith("=") and not version.startswith("=="):
        version = "==" + version[1:].split("=")[0]  # name=1.2=build -> name==1.2
    elif version and version[0].isdigit():
        version = "==" + version.split("=")[0]  # name 1.2
    return name + version


def pip_requirements(text):
    """(requirements, left out) of an environment file's ``dependencies``, in its order."""
    requirements, left_out = [], []
    in_dependencies, pip_indent = False, None
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        item = line.strip()
        if indent == 0:
            in_dependencies, pip_indent = item.startswith("dependencies:"), None
            continue
        if not in_dependencies or not item.startswith("-"):
            continue
        item = item[1:].strip().strip("'\"")
        if pip_indent is not None and indent > pip_indent:
            requirements.append(item)  # an entry of the pip: list, a pip requirement already
            continue
        pip_indent = None
        if re.match(r"^pip\s*:$", item):
            pip_indent = indent
            continue
        requirement = pip_requirement(item)
        if requirement is None:
            left_out.append(item)
        else:
            requirements.append(requirement)
    return requirements, left_out


def main(argv):
    for path in argv[1:]:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        requirements, left_out = pip_requirements(text)
        if left_out:
            sys.stderr.write(f"gym_swe: left out of {path} (not pip packages): {', '.join(left_out)}\n")
        sys.stdout.write("".join(requirement + "\n" for requirement in requirements))
        return 0
    sys.stderr.write(f"gym_swe: no conda environment file at {', '.join(argv[1:])}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
