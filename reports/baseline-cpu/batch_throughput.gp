# batch_throughput.gp — tpbench report chart "Effect of batch size on throughput"
# Data: batch_throughput.dat. Redraw from this directory: gnuplot batch_throughput.gp
# (writes batch_throughput.png and batch_throughput.svg).
set encoding utf8
set terminal pngcairo noenhanced size 1100,620 font 'Sans,11'
set output 'batch_throughput.png'
set label 101 "Effect of batch size on throughput" at screen 0.5, screen 0.964516 center font ',14'
set label 102 "samples/s of all ranks together, median over repeats (error bars: min to max); N=1, 4096 samples/epoch, 2 epochs (3 other configs not shown: report" at screen 0.5, screen 0.925806 center font ',10' textcolor rgb '#444444'
set label 103 "--where KEY=VALUE draws another)" at screen 0.5, screen 0.898387 center font ',10' textcolor rgb '#444444'
set tmargin 6
set grid lc rgb '#dddddd'
set key outside right top Left reverse
set xlabel "batch size per device"
set ylabel "throughput (samples/s)"
set logscale x 2
set xtics ("32" 32, "128" 128)
set yrange [0:*]
set offsets graph 0.05, graph 0.05, 0, 0
plot 'batch_throughput.dat' index 0 using 1:2:4:5 with yerrorlines title "single (reference)" lc rgb '#7f7f7f' dt 1 lw 2 pt 7 ps 1.2, \
     'batch_throughput.dat' index 1 using 1:2:4:5 with yerrorlines title "param_server (from scratch)" lc rgb '#1f77b4' dt 1 lw 2 pt 7 ps 1.2, \
     'batch_throughput.dat' index 2 using 1:2:4:5 with yerrorlines title "ring_all_reduce (from scratch)" lc rgb '#2ca02c' dt 1 lw 2 pt 7 ps 1.2, \
     'batch_throughput.dat' index 3 using 1:2:4:5 with yerrorlines title "allreduce (library)" lc rgb '#9467bd' dt 1 lw 2 pt 7 ps 1.2, \
     'batch_throughput.dat' index 4 using 1:2:4:5 with yerrorlines title "ddp (builtin)" lc rgb '#d62728' dt 1 lw 2 pt 7 ps 1.2, \
     'batch_throughput.dat' index 5 using 1:2:4:5 with yerrorlines title "data_parallel (builtin)" lc rgb '#ff7f0e' dt 1 lw 2 pt 7 ps 1.2
set terminal svg noenhanced size 1100,620 dynamic font 'Sans,11' background rgb 'white'
set output 'batch_throughput.svg'
replot
set output
