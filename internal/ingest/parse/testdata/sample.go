package main

import "fmt"

// Hello greets.
func Hello(name string) string {
	msg := "hi " + name

	return msg
}

type T struct {
	A int
}

func main() {
	fmt.Println(Hello("x"))
}
