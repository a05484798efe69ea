module example.com/textwrap

go 1.19
