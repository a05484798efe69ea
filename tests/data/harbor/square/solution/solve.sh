#!/bin/bash
printf 'def square(x):\n    return x * x\n' > square.py
