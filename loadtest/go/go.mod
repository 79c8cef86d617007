module sockjs-go-contender

go 1.19

require github.com/igm/sockjs-go/v3 v3.0.2

require github.com/gorilla/websocket v1.5.3 // indirect
