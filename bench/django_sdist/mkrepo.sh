#!/bin/bash
# mkrepo.sh VERSION: a git repository of Django's sdist VERSION at $DJANGO_SDIST_ROOT/repos/VERSION (the sdist in $DJANGO_SDIST_ROOT/sdists)
set -e
v=$1
ROOT=${DJANGO_SDIST_ROOT:-/work/runs/django}
src=$ROOT/sdists/Django-$v.tar.gz
[ -f $src ] || src=$ROOT/sdists/django-$v.tar.gz
dst=$ROOT/repos/$v
[ -d $dst/.git ] && exit 0
rm -rf $dst; mkdir -p $dst
tar -xzf $src -C $dst --strip-components=1
cd $dst
rm -rf PKG-INFO *.egg-info
# setuptools' sdist appends an [egg_info] section to setup.cfg: the repository has none
python3 - <<'PY'
import re
t=open("setup.cfg").read()
t2=re.sub(r"\n*\[egg_info\]\ntag_build = \ntag_date = 0\n*$", "\n", t)
open("setup.cfg","w").write(t2)
PY
git init -q
git add -A
GIT_COMMITTER_DATE="2000-01-01T00:00:00" git -c user.name=gym-swe -c user.email=gym-swe@localhost commit -qm "Django $v (PyPI sdist)" --date="2000-01-01T00:00:00"
git rev-parse HEAD
