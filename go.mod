module capsuled

go 1.26
