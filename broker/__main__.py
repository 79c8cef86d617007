from broker.app import main

main()
